// Package openapi holds the OpenAPI 3.1 document of shardline's HTTP API
// (openapi.yaml beside this file) and serves it; package openapitest checks
// answers against it in tests.
package openapi

import (
	"bytes"
	_ "embed"
	"net/http"
	"strconv"
)

//go:embed openapi.yaml
var document []byte

// Path is where the local server serves the document.
const Path = "/openapi.yaml"

// MediaType is the document's media type (RFC 9512).
const MediaType = "application/yaml"

// Document is the document, YAML. It returns a copy: callers may change it.
func Document() []byte { return bytes.Clone(document) }

// Handler serves the document to GET and HEAD, and refuses other methods
// with a 405 shaped as the API's errors are.
func Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusMethodNotAllowed)
			_, _ = w.Write([]byte(`{"error":"the OpenAPI document is read with GET"}`))
			return
		}
		w.Header().Set("Content-Type", MediaType)
		w.Header().Set("Content-Length", strconv.Itoa(len(document)))
		if r.Method == http.MethodHead {
			return
		}
		_, _ = w.Write(document)
	})
}
