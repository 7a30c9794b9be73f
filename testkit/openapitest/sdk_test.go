package openapitest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2"
	cehttp "github.com/cloudevents/sdk-go/v2/protocol/http"
	"github.com/getkin/kin-openapi/openapi3filter"

	"github.com/shardline/shardline/local/openapi"
)

// sdkEvent is an event as a producer builds it with the CloudEvents Go SDK,
// with data of the given media type (none when contentType is "").
func sdkEvent(t *testing.T, id, contentType string, data any) cloudevents.Event {
	t.Helper()
	ev := cloudevents.NewEvent()
	ev.SetID(id)
	ev.SetSource("sdk/orders")
	ev.SetType("com.example.order.created")
	ev.SetTime(time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC))
	ev.SetSubject("truck/DE 0001 #" + id)
	ev.SetExtension("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	if contentType != "" {
		if err := ev.SetData(contentType, data); err != nil {
			t.Fatal(err)
		}
	}
	return ev
}

// asExchange is req as the checker takes it.
func asExchange(t *testing.T, req *http.Request) Exchange {
	t.Helper()
	var body []byte
	if req.Body != nil {
		var err error
		if body, err = io.ReadAll(req.Body); err != nil {
			t.Fatal(err)
		}
	}
	return Exchange{Method: req.Method, Path: req.URL.Path, RawQuery: req.URL.RawQuery, Header: req.Header, Body: body}
}

// TestSDKRequestsValidate: what the official CloudEvents SDKs send by
// default validates against the document with kin-openapi, as a validating
// gateway or a contract test built from the document would check it:
// binary mode exactly as the Go SDK writes it (client.Send's default) and
// as the JS SDK writes it (Content-Type application/json; charset=utf-8,
// the data as the body), beside the structured and batch forms.
func TestSDKRequestsValidate(t *testing.T) {
	c, err := New(Ingest)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	const target = "http://127.0.0.1:8080/v1/events"
	evs := []cloudevents.Event{
		sdkEvent(t, "json", cloudevents.ApplicationJSON, json.RawMessage(`{"amount":12345678901234567890,"lines":[{"sku":"a"}]}`)),
		sdkEvent(t, "json-array", cloudevents.ApplicationJSON, json.RawMessage(`[1,2,3]`)),
		sdkEvent(t, "json-string", cloudevents.ApplicationJSON, json.RawMessage(`"just a string"`)),
		sdkEvent(t, "text", "text/plain; charset=utf-8", "grüße <&>"),
		sdkEvent(t, "bytes", "application/octet-stream", []byte{0, 0xff, 'x'}),
		sdkEvent(t, "xml", "application/xml", []byte(`<order id="1"/>`)),
		sdkEvent(t, "none", "", nil),
	}
	for _, ev := range evs {
		t.Run("go binary "+ev.ID(), func(t *testing.T) {
			req, err := cehttp.NewHTTPRequestFromEvent(ctx, target, ev)
			if err != nil {
				t.Fatal(err)
			}
			if req.Header.Get("ce-specversion") == "" {
				t.Fatalf("the SDK did not send binary mode: %v", req.Header)
			}
			if err := c.CheckRequest(ctx, asExchange(t, req)); err != nil {
				t.Fatal(err)
			}
		})
		t.Run("go structured "+ev.ID(), func(t *testing.T) {
			req, err := cehttp.NewHTTPRequestFromEvent(cloudevents.WithEncodingStructured(ctx), target, ev)
			if err != nil {
				t.Fatal(err)
			}
			if err := c.CheckRequest(ctx, asExchange(t, req)); err != nil {
				t.Fatal(err)
			}
		})
	}
	t.Run("go batch", func(t *testing.T) {
		req, err := cehttp.NewHTTPRequestFromEvents(ctx, target, evs)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.CheckRequest(ctx, asExchange(t, req)); err != nil {
			t.Fatal(err)
		}
	})

	// The JS SDK (v10) as issue 20 recorded its requests.
	jsHeaders := func(contentType string, ce bool) http.Header {
		h := http.Header{"Content-Type": {contentType}}
		if ce {
			for k, v := range map[string]string{"ce-id": "js-1", "ce-time": "2026-11-22T10:00:00.000Z", "ce-type": "com.example.js",
				"ce-source": "sdk/js", "ce-specversion": "1.0"} {
				h.Set(k, v)
			}
		}
		return h
	}
	structured := `{"id":"js-1","time":"2026-11-22T10:00:00.000Z","type":"com.example.js","source":"sdk/js","specversion":"1.0","datacontenttype":"application/json","data":{"hello":"world"}}`
	for name, x := range map[string]Exchange{
		"js binary":     {Header: jsHeaders("application/json; charset=utf-8", true), Body: []byte(`{"hello":"world"}`)},
		"js structured": {Header: jsHeaders("application/cloudevents+json; charset=utf-8", false), Body: []byte(structured)},
		"js batch":      {Header: jsHeaders("application/cloudevents-batch+json; charset=utf-8", false), Body: []byte("[" + structured + "]")},
	} {
		t.Run(name, func(t *testing.T) {
			x.Method, x.Path = "POST", "/v1/events"
			if err := c.CheckRequest(ctx, x); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestStructuredRequestsStayChecked: admitting any data in binary mode
// does not let a structured request that the API refuses pass.
func TestStructuredRequestsStayChecked(t *testing.T) {
	c, err := New(Ingest)
	if err != nil {
		t.Fatal(err)
	}
	for name, x := range map[string]Exchange{
		"no type":              {Header: http.Header{"Content-Type": {"application/json; charset=utf-8"}}, Body: []byte(`{"id":"1","source":"s"}`)},
		"data, not an event":   {Header: http.Header{"Content-Type": {"application/json"}}, Body: []byte(`{"hello":"world"}`)},
		"no body":              {Header: http.Header{"Content-Type": {"application/json"}}},
		"an empty subject":     {Header: http.Header{"Content-Type": {"application/cloudevents+json"}}, Body: []byte(`{"id":"1","source":"s","type":"t","subject":""}`)},
		"structured, ce-* too": {Header: http.Header{"Content-Type": {"application/cloudevents+json"}, "Ce-Specversion": {"1.0"}}, Body: []byte(`{"id":"1"}`)},
	} {
		t.Run(name, func(t *testing.T) {
			x.Method, x.Path = "POST", "/v1/events"
			if err := c.CheckRequest(context.Background(), x); err == nil {
				t.Fatal("the document accepted it")
			}
		})
	}
}

// TestDocumentAnswerIsDescribed: the answer to GET /openapi.yaml, the
// document itself, matches what the document declares for it whether a
// validator reads a YAML body as text (as Prism and most tools do with a
// media type that is not JSON) or decodes it (as kin-openapi does).
func TestDocumentAnswerIsDescribed(t *testing.T) {
	doc, err := Document()
	if err != nil {
		t.Fatal(err)
	}
	resp := doc.Paths.Value(openapi.Path).Get.Responses.Status(http.StatusOK)
	mt := resp.Value.Content.Get(openapi.MediaType)
	if mt == nil {
		t.Fatalf("GET %s declares no %s answer", openapi.Path, openapi.MediaType)
	}
	if mt.Schema == nil {
		return // any body: nothing a validator could refuse
	}
	var decoded any // the document as a YAML decoder gives it, by way of JSON
	b, err := doc.MarshalJSON()
	if err == nil {
		err = json.Unmarshal(b, &decoded)
	}
	if err != nil {
		t.Fatal(err)
	}
	for name, v := range map[string]any{"as text": string(openapi.Document()), "decoded": decoded} {
		if err := mt.Schema.Value.VisitJSON(v); err != nil {
			t.Errorf("the document read %s does not match its own declaration: %s", name, strings.SplitN(err.Error(), "\n", 2)[0])
		}
	}
}

// TestLocalAuthorizationSatisfiesTheSecurityRequirement: a tool that
// enforces the document's security requirement (Prism, a validating proxy)
// refuses a request to make run's server without Authorization, and takes
// one with the header the document's local server entry names.
func TestLocalAuthorizationSatisfiesTheSecurityRequirement(t *testing.T) {
	doc, err := Document()
	if err != nil {
		t.Fatal(err)
	}
	const header = "Authorization: local"
	if !strings.Contains(doc.Servers[0].Description, header) || !strings.Contains(doc.Servers[0].URL, "127.0.0.1") {
		t.Fatalf("the local server entry (%s: %q) does not name %q", doc.Servers[0].URL, doc.Servers[0].Description, header)
	}
	c, err := New(Query)
	if err != nil {
		t.Fatal(err)
	}
	// What an enforcing tool checks of an apiKey scheme: the header is sent.
	enforce := func(_ context.Context, in *openapi3filter.AuthenticationInput) error {
		s := in.SecurityScheme
		if s.Type != "apiKey" || s.In != "header" {
			return fmt.Errorf("scheme %s: not an API key in a header", in.SecuritySchemeName)
		}
		if in.RequestValidationInput.Request.Header.Get(s.Name) == "" {
			return fmt.Errorf("no %s header", s.Name)
		}
		return nil
	}
	for _, c2 := range []struct {
		header http.Header
		ok     bool
	}{{http.Header{}, false}, {http.Header{"Authorization": {"local"}}, true}} {
		x := Exchange{Method: "GET", Path: "/v1/events", RawQuery: "source=s", Header: c2.header}
		route, _ := c.route(x.Method, x.Path)
		in, err := c.input(route, x)
		if err != nil {
			t.Fatal(err)
		}
		in.Options.AuthenticationFunc = enforce
		err = openapi3filter.ValidateRequest(context.Background(), in)
		if (err == nil) != c2.ok {
			t.Errorf("headers %v: %v; want accepted %v", c2.header, err, c2.ok)
		}
	}
}
