package devserver

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/shardline/shardline/local/httpapi"
	"github.com/shardline/shardline/local/openapi"
	"github.com/shardline/shardline/testkit/openapitest"
)

// TestServesTheDocument: the local server answers GET /openapi.yaml with
// the document and passes every other request to the API's routes; each
// exchange is checked against the document.
func TestServesTheDocument(t *testing.T) {
	mux := httpapi.NewMux()
	mux.Handle("GET /v1/sources", func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		return events.APIGatewayV2HTTPResponse{StatusCode: 200, Headers: map[string]string{"Content-Type": "application/json"},
			Body: `{"sources":[],"next_cursor":""}`}, nil
	})
	srv := httptest.NewServer(withDocument(mux))
	defer srv.Close()
	client := openapitest.Client(t, openapitest.Any)

	for _, c := range []struct {
		path   string
		status int
	}{{openapi.Path, 200}, {"/v1/sources", 200}, {"/nowhere", 404}} {
		resp, err := client.Get(srv.URL + c.path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.status {
			t.Fatalf("GET %s: %d %s", c.path, resp.StatusCode, body)
		}
		if c.path == openapi.Path && !bytes.Equal(body, openapi.Document()) {
			t.Fatalf("GET %s is not the document", c.path)
		}
	}

	// The document tells tools that enforce its security requirement to
	// send Authorization: local to this server; it is taken.
	req, err := http.NewRequest(http.MethodGet, srv.URL+"/v1/sources", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "local")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /v1/sources with Authorization: local: %d", resp.StatusCode)
	}
}
