package ingest

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/shardline/shardline/internal/schema"
)

// binaryPost is a binary-mode request as API Gateway (HTTP API) passes it:
// header names in lower case.
func binaryPost(body, contentType string, ce map[string]string) events.APIGatewayV2HTTPRequest {
	req := post(body, contentType)
	if contentType == "" {
		delete(req.Headers, "content-type")
	}
	for k, v := range ce {
		req.Headers["ce-"+k] = v
	}
	return req
}

// TestHTTPBinaryMode: an event in the CloudEvents HTTP binary content mode,
// as the official SDKs send by default, is stored as the same event in
// structured form would be.
func TestHTTPBinaryMode(t *testing.T) {
	e := newEnv(t, false, nil)
	at := fixtureNow.Add(-time.Minute).Format(time.RFC3339)
	resp, err := e.h.HTTP(context.Background(), binaryPost(`{"amount": 12345678901234567890}`, "application/json",
		map[string]string{"specversion": "1.0", "id": "ord%2F42%20%23a", "source": "shop", "type": "order.created",
			"time": at, "subject": "o%2F42", "traceparent": "00-ab"}))
	if err != nil || resp.StatusCode != 202 {
		t.Fatalf("%v %d %s", err, resp.StatusCode, resp.Body)
	}
	items := e.itemsIn(t, "E#shop#")
	if len(items) != 1 {
		t.Fatalf("%d events stored, want 1", len(items))
	}
	want := `{"specversion":"1.0","id":"ord/42 #a","source":"shop","type":"order.created","time":"2026-11-22T11:59:00Z",` +
		`"subject":"o/42","datacontenttype":"application/json","traceparent":"00-ab","data":{"amount":12345678901234567890}}`
	if got := s(items[0], schema.Event); got != want {
		t.Fatalf("stored\n got %s\nwant %s", got, want)
	}

	// The same event in structured mode lands on the same item.
	if resp, _ := e.h.HTTP(context.Background(), post(want, "application/cloudevents+json")); resp.StatusCode != 202 {
		t.Fatalf("structured: %d %s", resp.StatusCode, resp.Body)
	}
	if items := e.itemsIn(t, "E#shop#"); len(items) != 1 || s(items[0], schema.Event) != want {
		t.Fatalf("after the structured copy: %d items", len(items))
	}
}

// TestHTTPBinaryModeRefusals: a binary-mode event that is not valid is
// refused with 400, naming the header (not the attribute) at fault, and
// quarantined whole in structured form.
func TestHTTPBinaryModeRefusals(t *testing.T) {
	e := newEnv(t, false, nil)
	ok := map[string]string{"specversion": "1.0", "id": "1", "source": "s", "type": "t"}
	with := func(k, v string) map[string]string {
		m := map[string]string{}
		for a, b := range ok {
			m[a] = b
		}
		if v == "" {
			delete(m, k)
		} else {
			m[k] = v
		}
		return m
	}
	cases := []struct {
		name, contentType, body string
		ce                      map[string]string
		field                   string
	}{
		{"no ce-id", "text/plain", "x", with("id", ""), "ce-id"},
		{"specversion 0.3", "text/plain", "x", with("specversion", "0.3"), "ce-specversion"},
		{"upper-case extension header", "text/plain", "x", with("Trace_Parent", "1"), "ce-trace_parent"},
		{"bad percent-encoding", "text/plain", "x", with("id", "100%"), "ce-id"},
		{"ce-datacontenttype", "text/plain", "x", with("datacontenttype", "text/plain"), "ce-datacontenttype"},
		{"JSON that is not", "application/json", "{nope", ok, "body"},
		{"time in the future", "", "", with("time", "2026-11-22T13:00:00Z"), "ce-time"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp, err := e.h.HTTP(context.Background(), binaryPost(c.body, c.contentType, c.ce))
			if err != nil || resp.StatusCode != 400 {
				t.Fatalf("%v %d %s; want 400", err, resp.StatusCode, resp.Body)
			}
			r := decodeResponse(t, resp.Body)
			if len(r.Rejected) != 1 || !strings.HasPrefix(r.Rejected[0].Error, c.field+": ") {
				t.Fatalf("body %s; want a rejection naming %s", resp.Body, c.field)
			}
		})
	}
	q := e.itemsIn(t, "Q#")
	if len(q) != len(cases) {
		t.Fatalf("%d quarantined, want %d", len(q), len(cases))
	}
	for _, it := range q {
		raw, _ := it[schema.Raw].(*types.AttributeValueMemberB)
		var v map[string]any
		if raw == nil || json.Unmarshal(raw.Value, &v) != nil || v["specversion"] == nil {
			t.Fatalf("quarantined raw %v is not the event in structured form", it[schema.Raw])
		}
	}
}

// TestHTTPModes: which mode a request is read in. Without a ce-specversion
// header, a media type other than JSON is still refused.
func TestHTTPModes(t *testing.T) {
	e := newEnv(t, false, nil)
	good := string(eventJSON("web", "m-1", fixtureNow.Add(-time.Minute)))
	ce := map[string]string{"specversion": "1.0", "id": "m-2", "source": "web", "type": "t"}
	for _, c := range []struct {
		name   string
		req    events.APIGatewayV2HTTPRequest
		status int
	}{
		{"binary, text data", binaryPost("hello", "text/plain", ce), 202},
		{"binary, no body", binaryPost("", "", ce), 202},
		{"binary, a JSON body that looks like an event", binaryPost(good, "application/json", ce), 202},
		{"structured with stray ce- headers", binaryPost(good, "application/cloudevents+json", ce), 202},
		{"text without ce-specversion", post("hello", "text/plain"), 415},
		{"an unknown CloudEvents format", binaryPost("x", "application/cloudevents+avro", ce), 415},
	} {
		t.Run(c.name, func(t *testing.T) {
			resp, err := e.h.HTTP(context.Background(), c.req)
			if err != nil || resp.StatusCode != c.status {
				t.Fatalf("%v %d %s; want %d", err, resp.StatusCode, resp.Body, c.status)
			}
		})
	}
	// The binary event with an event-shaped body stored that body as data.
	for _, it := range e.itemsIn(t, "E#web#") {
		if ev := storedEvent(t, it); ev["id"] == "m-2" && ev["data"] == nil && ev["datacontenttype"] == "application/json" {
			t.Fatalf("binary event %v lost its data", ev)
		}
	}
}

// TestRESTBinaryMode: a REST API (v1) request keeps header names as sent.
func TestRESTBinaryMode(t *testing.T) {
	e := newEnv(t, false, nil)
	req := events.APIGatewayProxyRequest{HTTPMethod: "POST", Path: "/v1/events", Body: "hi",
		Headers: map[string]string{"Content-Type": "text/plain", "Ce-Specversion": "1.0", "Ce-Id": "r-1", "Ce-Source": "rest", "Ce-Type": "t",
			"Ce-Myext": "v"}}
	req.RequestContext.RequestTimeEpoch = fixtureNow.UnixMilli()
	resp, err := e.h.REST(context.Background(), req)
	if err != nil || resp.StatusCode != 202 {
		t.Fatalf("%v %d %s", err, resp.StatusCode, resp.Body)
	}
	items := e.itemsIn(t, "E#rest#")
	if len(items) != 1 || !strings.HasSuffix(s(items[0], schema.Event), `"datacontenttype":"text/plain","myext":"v","data":"hi"}`) {
		t.Fatalf("stored %v", items)
	}
}
