package ingest

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/shardline/shardline/internal/schema"
	"github.com/shardline/shardline/testkit/faultproxy"
)

func post(body, contentType string) events.APIGatewayV2HTTPRequest {
	req := events.APIGatewayV2HTTPRequest{Version: "2.0", RouteKey: "POST /v1/events", RawPath: "/v1/events", Body: body,
		Headers: map[string]string{"content-type": contentType}}
	req.RequestContext.HTTP.Method = "POST"
	req.RequestContext.RequestID = "req-" + fmt.Sprint(time.Now().UnixNano())
	req.RequestContext.TimeEpoch = fixtureNow.UnixMilli()
	return req
}

func decodeResponse(t *testing.T, body string) Response {
	t.Helper()
	var r Response
	if err := json.Unmarshal([]byte(body), &r); err != nil {
		t.Fatalf("response body %q: %v", body, err)
	}
	return r
}

func TestHTTPFixture(t *testing.T) {
	e := newEnv(t, false, nil)
	out, err := e.h.Invoke(context.Background(), readFixture(t, "api-ingest-v2.json"))
	if err != nil {
		t.Fatal(err)
	}
	resp, ok := out.(events.APIGatewayV2HTTPResponse)
	if !ok || resp.StatusCode != 202 || resp.Headers["Content-Type"] != "application/json" {
		t.Fatalf("response %#v", out)
	}
	r := decodeResponse(t, resp.Body)
	if r.Accepted != 4 || len(r.Rejected) != 1 || r.Rejected[0].Index != 4 || r.Rejected[0].ID != "chk-1004" ||
		!strings.HasPrefix(r.Rejected[0].Error, "time: ") {
		t.Fatalf("body %s", resp.Body)
	}
	if n := len(e.itemsIn(t, "E#checkout-web#")); n != 3 {
		t.Fatalf("%d checkout events stored, want 3", n)
	}
	q := e.itemsIn(t, "Q#")
	if len(q) != 1 {
		t.Fatalf("%d quarantined, want 1", len(q))
	}
	origin := q[0][schema.Origin]
	b, _ := json.Marshal(origin)
	if !strings.Contains(string(b), "Kd7x3gHwIAMEVxw=") {
		t.Fatalf("quarantine origin %s lacks the request id", b)
	}
}

func TestRESTFixture(t *testing.T) {
	e := newEnv(t, false, nil)
	out, err := e.h.Invoke(context.Background(), readFixture(t, "rest-ingest-v1.json"))
	if err != nil {
		t.Fatal(err)
	}
	resp, ok := out.(events.APIGatewayProxyResponse)
	if !ok || resp.StatusCode != 202 {
		t.Fatalf("response %#v", out)
	}
	if r := decodeResponse(t, resp.Body); r.Accepted != 1 || len(r.Rejected) != 0 {
		t.Fatalf("body %s", resp.Body)
	}
	if n := len(e.itemsIn(t, "E#iot/fleet-7#")); n != 1 {
		t.Fatalf("%d events stored, want 1", n)
	}
}

func TestInvokeRejectsUnknownPayloads(t *testing.T) {
	e := newEnv(t, false, nil)
	for _, p := range []string{`{}`, `[]`, `{"Records":[{"eventSource":"aws:sqs"}]}`, `nope`} {
		if _, err := e.h.Invoke(context.Background(), json.RawMessage(p)); err == nil {
			t.Errorf("Invoke(%s) succeeded", p)
		}
	}
}

func TestHTTPAnswers(t *testing.T) {
	e := newEnv(t, false, nil)
	good := string(eventJSON("web", "w-1", fixtureNow.Add(-time.Minute)))
	many := "[" + strings.Repeat(good+",", MaxRequestEvents) + good + "]"
	cases := []struct {
		name       string
		req        events.APIGatewayV2HTTPRequest
		status     int
		accepted   int
		rejected   int
		errContain string
	}{
		{"one event", post(good, "application/json"), 202, 1, 0, ""},
		{"cloudevents+json", post(good, "application/cloudevents+json; charset=utf-8"), 202, 1, 0, ""},
		{"no content type", post(good, ""), 202, 1, 0, ""},
		{"mixed array", post("["+good+`,{"id":"x","source":"web"}]`, "application/json"), 202, 1, 1, ""},
		{"none valid", post(`[{"id":"x","source":"web"},{"source":"web","type":"t"}]`, "application/json"), 400, 0, 2, ""},
		{"malformed body", post(`{"id":`, "application/json"), 400, 0, 1, ""},
		{"empty array", post(`[]`, "application/json"), 400, 0, 0, "no events"},
		{"empty body", post(``, "application/json"), 400, 0, 1, ""},
		{"batch that is not an array", post(good, "application/cloudevents-batch+json"), 400, 0, 1, ""},
		{"wrong content type", post(good, "text/plain"), 415, 0, 0, "Content-Type"},
		{"too many events", post(many, "application/json"), 413, 0, 0, "1000"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp, err := e.h.HTTP(context.Background(), c.req)
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != c.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, c.status, resp.Body)
			}
			var r struct {
				Accepted *int        `json:"accepted"`
				Rejected []Rejection `json:"rejected"`
				Error    string      `json:"error"`
			}
			if err := json.Unmarshal([]byte(resp.Body), &r); err != nil {
				t.Fatal(err)
			}
			if c.status == 202 || (c.status == 400 && c.errContain == "") {
				if r.Accepted == nil || *r.Accepted != c.accepted || len(r.Rejected) != c.rejected {
					t.Fatalf("body %s, want accepted %d rejected %d", resp.Body, c.accepted, c.rejected)
				}
				for _, rj := range r.Rejected {
					if rj.Error == "" || !strings.Contains(rj.Error, ": ") {
						t.Fatalf("rejection %+v does not name a field", rj)
					}
				}
			}
			if !strings.Contains(r.Error, c.errContain) {
				t.Fatalf("error %q lacks %q", r.Error, c.errContain)
			}
		})
	}
}

func TestHTTPBase64AndRoutes(t *testing.T) {
	e := newEnv(t, false, nil)
	good := eventJSON("web", "b64", fixtureNow.Add(-time.Minute))
	req := post(base64.StdEncoding.EncodeToString(good), "application/json")
	req.IsBase64Encoded = true
	if resp, _ := e.h.HTTP(context.Background(), req); resp.StatusCode != 202 {
		t.Fatalf("base64 body: %d %s", resp.StatusCode, resp.Body)
	}
	req = post("not base64!", "application/json")
	req.IsBase64Encoded = true
	if resp, _ := e.h.HTTP(context.Background(), req); resp.StatusCode != 400 || !strings.Contains(resp.Body, "base64") {
		t.Fatalf("bad base64: %d %s", resp.StatusCode, resp.Body)
	}
	req = post(string(good), "application/json")
	req.RequestContext.HTTP.Method = "GET"
	if resp, _ := e.h.HTTP(context.Background(), req); resp.StatusCode != 405 || resp.Headers["Allow"] != "POST" {
		t.Fatalf("GET: %d %v", resp.StatusCode, resp.Headers)
	}
	req = post(string(good), "application/json")
	req.RawPath = "/v2/other"
	if resp, _ := e.h.HTTP(context.Background(), req); resp.StatusCode != 404 {
		t.Fatalf("other path: %d", resp.StatusCode)
	}
}

// TestHTTPUnavailableThenRetry: with storage failing, the answer is 503 with
// Retry-After; the same request sent again once storage is back stores each
// event once.
func TestHTTPUnavailableThenRetry(t *testing.T) {
	e := newEnv(t, true, nil)
	e.proxy.SetRule(func(r faultproxy.Request) (*faultproxy.Fault, faultproxy.Hold) {
		if r.Op == "BatchWriteItem" {
			return faultproxy.ServerError, nil
		}
		return nil, nil
	})
	var evs []string
	for i := range 30 {
		evs = append(evs, string(eventJSON("web", fmt.Sprintf("r-%d", i), fixtureNow.Add(-time.Minute))))
	}
	req := post("["+strings.Join(evs, ",")+"]", "application/cloudevents-batch+json")
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	resp, err := e.h.HTTP(ctx, req)
	cancel()
	if err != nil || resp.StatusCode != 503 || resp.Headers["Retry-After"] == "" || !strings.Contains(resp.Body, "again") {
		t.Fatalf("%v: %d %v %s", err, resp.StatusCode, resp.Headers, resp.Body)
	}
	e.proxy.SetRule(nil)
	for range 2 { // the producer's retry, and a duplicate of it
		resp, err = e.h.HTTP(context.Background(), req)
		if err != nil || resp.StatusCode != 202 {
			t.Fatalf("retry: %v %d %s", err, resp.StatusCode, resp.Body)
		}
	}
	if n := len(e.itemsIn(t, "E#")); n != 30 {
		t.Fatalf("%d events stored, want 30", n)
	}
}
