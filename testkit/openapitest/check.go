// Package openapitest checks the requests and answers of shardline's HTTP
// API against its OpenAPI document (package openapi), for the API's tests:
// an answer the document does not describe, or a request the API accepted
// whole that the document would refuse, is an error. The validation is
// kin-openapi's (openapi3filter, JSON Schema 2020-12 for OpenAPI 3.1).
package openapitest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"

	"github.com/shardline/shardline/local/openapi"
)

// Function names the part of the API a handler serves: the operations
// whose x-shardline-function it is.
type Function string

// The functions, as the document names them.
const (
	Ingest    Function = "ingest"    // POST /v1/events
	Query     Function = "query"     // the GET routes
	DevServer Function = "devserver" // GET /openapi.yaml
	Any       Function = ""          // every operation: the whole API, as the local server serves it
)

// functionKey is the extension that names an operation's function.
const functionKey = "x-shardline-function"

// Exchange is one request and the answer to it.
type Exchange struct {
	Method   string
	Path     string // as received: a stage prefix and a trailing slash are allowed
	RawQuery string
	Header   http.Header
	Body     []byte

	Status     int
	RespHeader http.Header
	RespBody   []byte
}

// String names the exchange in an error: method, path and status.
func (x Exchange) String() string {
	target := x.Path
	if x.RawQuery != "" {
		target += "?" + x.RawQuery
	}
	if len(target) > 200 {
		target = target[:200] + "..."
	}
	return fmt.Sprintf("%s %s -> %d", x.Method, target, x.Status)
}

// Checker checks exchanges with one function against the document.
type Checker struct {
	doc      *openapi3.T
	function Function
}

var loaded struct {
	once sync.Once
	doc  *openapi3.T
	err  error
}

// Document is the API's document, loaded and validated once.
func Document() (*openapi3.T, error) {
	loaded.once.Do(func() {
		loader := openapi3.NewLoader()
		doc, err := loader.LoadFromData(openapi.Document())
		if err != nil {
			loaded.err = fmt.Errorf("load the OpenAPI document: %w", err)
			return
		}
		if !doc.IsOpenAPI31OrLater() {
			loaded.err = fmt.Errorf("the OpenAPI document is version %s; want 3.1", doc.OpenAPI)
			return
		}
		if err := doc.Validate(loader.Context); err != nil {
			loaded.err = fmt.Errorf("the OpenAPI document is not valid: %w", err)
			return
		}
		loaded.doc = doc
	})
	return loaded.doc, loaded.err
}

// New returns a Checker for the operations of f.
func New(f Function) (*Checker, error) {
	doc, err := Document()
	if err != nil {
		return nil, err
	}
	return &Checker{doc: doc, function: f}, nil
}

// Check validates x: the answer must be one the document describes for the
// request, and a request the API accepted whole (a 2xx that rejected no
// event) must be one the document accepts. An exchange outside the
// function's operations must be a 404 or 405 as the document's
// NotFound and MethodNotAllowed responses describe.
func (c *Checker) Check(ctx context.Context, x Exchange) error {
	route, ok := c.route(x.Method, x.Path)
	if !ok {
		return c.checkUnrouted(ctx, x)
	}
	in, err := c.input(route, x)
	if err != nil {
		return err
	}
	var errs []error
	if err := c.checkAnswer(ctx, in, x); err != nil {
		errs = append(errs, fmt.Errorf("%v: the answer does not match the OpenAPI document: %s\nbody: %.500s", x, clip(err), x.RespBody))
	}
	// A refused request may be anything; one accepted whole must be one
	// the document accepts, or the document is stricter than the API.
	if acceptedWhole(x) {
		if err := c.validateRequest(ctx, route, x); err != nil {
			errs = append(errs, fmt.Errorf("%v: the API accepted a request that the OpenAPI document refuses: %s", x, clip(err)))
		}
	}
	return errors.Join(errs...)
}

// CheckRequest validates x's request alone, as a validating gateway or a
// contract test built from the document would: nil when the document
// accepts it. A request without a ce-specversion header is held to the
// structured forms (one event, an array, a batch) alone, as the API holds
// it.
func (c *Checker) CheckRequest(ctx context.Context, x Exchange) error {
	route, ok := c.route(x.Method, x.Path)
	if !ok {
		return fmt.Errorf("%s %s: no operation of the OpenAPI document (function %q) serves it", x.Method, x.Path, c.function)
	}
	if err := c.validateRequest(ctx, route, x); err != nil {
		return fmt.Errorf("%s %s: the OpenAPI document refuses the request: %s", x.Method, x.Path, clip(err))
	}
	return nil
}

// input is the validation input of x's request on route. The deployed
// API checks signatures; the document only names the scheme, and the
// handlers never see one, so authentication is not checked here.
func (c *Checker) input(route *routers.Route, x Exchange) (*openapi3filter.RequestValidationInput, error) {
	req, err := c.request(x)
	if err != nil {
		return nil, err
	}
	opts := &openapi3filter.Options{
		MultiError:          true,
		SkipSettingDefaults: true,
		AuthenticationFunc:  openapi3filter.NoopAuthenticationFunc,
	}
	params, _ := matchPath(strings.TrimRight(x.Path, "/"), route.Path)
	return &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route, Options: opts}, nil
}

// validateRequest validates x's request on route against the document,
// then, outside binary mode, its body against the structured forms alone:
// the document's JSON body admits any data for binary mode (OpenAPI cannot
// tie a body's schema to a header), which must not let a structured event
// without its required attributes pass.
func (c *Checker) validateRequest(ctx context.Context, route *routers.Route, x Exchange) error {
	in, err := c.input(route, x)
	if err != nil {
		return err
	}
	if err := openapi3filter.ValidateRequest(ctx, in); err != nil {
		return err
	}
	if binaryMode(x.Header) {
		return nil
	}
	structured, ok := structuredOnly(route)
	if !ok {
		return nil
	}
	if in, err = c.input(structured, x); err != nil {
		return err
	}
	return openapi3filter.ValidateRequest(ctx, in)
}

// binaryDataRef is the schema of a binary-mode body, one alternative of
// the request bodies that admit it.
const binaryDataRef = "#/components/schemas/BinaryModeData"

// structuredOnly is route with the binary-mode alternative taken out of
// each request body schema, and the body required (only binary mode may
// send none); ok is false when the operation admits no binary-mode body.
func structuredOnly(route *routers.Route) (*routers.Route, bool) {
	op := route.Operation
	if op.RequestBody == nil || op.RequestBody.Value == nil {
		return nil, false
	}
	body := *op.RequestBody.Value
	body.Required = true
	body.Content = openapi3.Content{}
	found := false
	for name, mt := range op.RequestBody.Value.Content {
		if mt.Schema == nil || mt.Schema.Value == nil {
			body.Content[name] = mt
			continue
		}
		schema := *mt.Schema.Value
		schema.AnyOf = nil
		for _, alt := range mt.Schema.Value.AnyOf {
			if alt.Ref == binaryDataRef {
				found = true
				continue
			}
			schema.AnyOf = append(schema.AnyOf, alt)
		}
		m := *mt
		m.Schema = &openapi3.SchemaRef{Value: &schema}
		body.Content[name] = &m
	}
	if !found {
		return nil, false
	}
	o := *op
	o.RequestBody = &openapi3.RequestBodyRef{Value: &body}
	r := *route
	r.Operation = &o
	return &r, true
}

// checkAnswer validates the answer of the request in.
func (c *Checker) checkAnswer(ctx context.Context, in *openapi3filter.RequestValidationInput, x Exchange) error {
	out := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: in,
		Status:                 x.Status,
		Header:                 x.RespHeader,
		Options:                &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true},
	}
	out.SetBodyBytes(x.RespBody)
	return openapi3filter.ValidateResponse(ctx, out)
}

// route finds the operation of c's function that serves method and path.
// A path matches a document path it ends with, so that a stage prefix
// (/prod/v1/events) matches as it does in the handlers; a {parameter}
// of the document's path matches one segment. Of several, the longest
// document path serves, as the handlers route: /v1/tenants/v1/events is
// tenant v1's route, not /v1/events.
func (c *Checker) route(method, path string) (*routers.Route, bool) {
	path = strings.TrimRight(path, "/")
	var best *routers.Route
	for p, item := range c.doc.Paths.Map() {
		if _, ok := matchPath(path, p); !ok {
			continue
		}
		op := item.GetOperation(method)
		if op == nil || (c.function != Any && op.Extensions[functionKey] != string(c.function)) {
			continue
		}
		if best == nil || strings.Count(p, "/") > strings.Count(best.Path, "/") {
			best = &routers.Route{Spec: c.doc, Path: p, PathItem: item, Method: method, Operation: op}
		}
	}
	return best, best != nil
}

// matchPath says whether path ends with the document's path p, a
// {parameter} of p matching any one segment, and gives the parameters.
func matchPath(path, p string) (map[string]string, bool) {
	if !strings.Contains(p, "{") {
		return nil, path == p || strings.HasSuffix(path, p)
	}
	want, got := strings.Split(p, "/"), strings.Split(path, "/")
	if len(got) < len(want) {
		return nil, false
	}
	got = got[len(got)-len(want):]
	params := map[string]string{}
	for i, w := range want {
		if strings.HasPrefix(w, "{") && strings.HasSuffix(w, "}") && got[i] != "" {
			params[w[1:len(w)-1]] = got[i]
		} else if got[i] != w {
			return nil, false
		}
	}
	return params, true
}

// checkUnrouted checks the answer to a request that no operation of c's
// function serves: a 404 or 405 as the document's components describe.
func (c *Checker) checkUnrouted(ctx context.Context, x Exchange) error {
	if x.Status != http.StatusNotFound && x.Status != http.StatusMethodNotAllowed {
		return fmt.Errorf("%v: no operation of the OpenAPI document (function %q) serves %s %s, so the answer must be 404 or 405",
			x, c.function, x.Method, x.Path)
	}
	rs := c.doc.Components.Responses
	op := openapi3.NewOperation()
	op.Responses = openapi3.NewResponses(
		openapi3.WithStatus(http.StatusNotFound, rs["NotFound"]),
		openapi3.WithStatus(http.StatusMethodNotAllowed, rs["MethodNotAllowed"]))
	req, err := c.request(x)
	if err != nil {
		return err
	}
	in := &openapi3filter.RequestValidationInput{
		Request: req,
		Route:   &routers.Route{Spec: c.doc, Path: x.Path, PathItem: &openapi3.PathItem{}, Method: x.Method, Operation: op},
		Options: &openapi3filter.Options{},
	}
	if err := c.checkAnswer(ctx, in, x); err != nil {
		return fmt.Errorf("%v: the answer does not match the OpenAPI document's %d: %s\nbody: %.500s", x, x.Status, clip(err), x.RespBody)
	}
	return nil
}

// request is x's request as net/http has it. A body sent without
// Content-Type is read as application/json, as the document says.
func (c *Checker) request(x Exchange) (*http.Request, error) {
	u := &url.URL{Path: x.Path, RawQuery: x.RawQuery}
	req, err := http.NewRequest(x.Method, u.String(), bytes.NewReader(x.Body))
	if err != nil {
		return nil, fmt.Errorf("%v: rebuild the request: %w", x, err)
	}
	req.Header = x.Header.Clone()
	if req.Header == nil {
		req.Header = http.Header{}
	}
	if req.Header.Get("Content-Type") == "" && !binaryMode(req.Header) && len(x.Body) > 0 {
		req.Header.Set("Content-Type", "application/json")
	}
	return req, nil
}

// binaryMode tells a request in the CloudEvents HTTP binary content mode,
// as the document defines it: a ce-specversion header, and a Content-Type
// that is not a CloudEvents format.
func binaryMode(h http.Header) bool {
	if h.Get("ce-specversion") == "" {
		return false
	}
	mt, _, _ := mime.ParseMediaType(h.Get("Content-Type"))
	return !strings.HasPrefix(mt, "application/cloudevents")
}

// clip is err's message cut to a readable length: kin-openapi's errors
// quote the schema and the value, and a value may be a 6 MB page.
func clip(err error) string {
	const most = 4000
	msg := err.Error()
	if len(msg) <= most {
		return msg
	}
	return fmt.Sprintf("%s... (%d more bytes)", msg[:most], len(msg)-most)
}

// acceptedWhole tells an answer that took the whole request: a 2xx that
// lists no rejected event.
func acceptedWhole(x Exchange) bool {
	if x.Status/100 != 2 {
		return false
	}
	var body struct {
		Rejected []json.RawMessage `json:"rejected"`
	}
	_ = json.Unmarshal(x.RespBody, &body)
	return len(body.Rejected) == 0
}
