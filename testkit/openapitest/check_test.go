package openapitest

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-lambda-go/events"
)

const (
	event = `{"specversion":"1.0","id":"1","source":"s","type":"t","time":"2026-11-22T10:00:00Z","data":{"n":12345678901234567890}}`
	plan  = `{"path":"gsi","reason":"r","requests":1,"consumed_rcu":0.5}`
)

func jsonHeader(kv ...string) http.Header {
	h := http.Header{"Content-Type": {"application/json"}}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Set(kv[i], kv[i+1])
	}
	return h
}

func get(path, query string, status int, body string, kv ...string) Exchange {
	return Exchange{Method: "GET", Path: path, RawQuery: query, Header: http.Header{},
		Status: status, RespHeader: jsonHeader(kv...), RespBody: []byte(body)}
}

func post(contentType, body string, status int, answer string, kv ...string) Exchange {
	h := http.Header{}
	if contentType != "" {
		h.Set("Content-Type", contentType)
	}
	return Exchange{Method: "POST", Path: "/v1/events", Header: h, Body: []byte(body),
		Status: status, RespHeader: jsonHeader(kv...), RespBody: []byte(answer)}
}

// rightAnswers are exchanges the document describes; each must pass.
var rightAnswers = map[string]struct {
	f Function
	x Exchange
}{
	"a page":                    {Query, get("/v1/events", "source=s&limit=10&order=asc&consistent=TRUE", 200, `{"events":[`+event+`],"next_cursor":"AQ-_x","plan":`+plan+`}`)},
	"the last page":             {Query, get("/v1/events", "source=s", 200, `{"events":[`+event+`],"next_cursor":"","plan":`+plan+`}`)},
	"epoch milliseconds":        {Query, get("/v1/events", "source=s&from=1795348800000&to=2026-11-22T10:00:00%2B01:00", 200, `{"events":[],"next_cursor":"","plan":`+plan+`}`)},
	"an unencoded plus":         {Query, get("/v1/events", "source=s&from=2026-11-22T10:00:00+01:00", 200, `{"events":[],"next_cursor":"","plan":`+plan+`}`)},
	"a stage and a slash":       {Query, get("/prod/v1/events/", "source=s", 200, `{"events":[],"next_cursor":"","plan":`+plan+`}`)},
	"a bad parameter":           {Query, get("/v1/events", "limit=0", 400, `{"error":"limit: is \"0\"; want a whole number from 1 to 1000"}`)},
	"storage unavailable":       {Query, get("/v1/counts", "source=s", 503, `{"error":"storage is unavailable; retry shortly"}`, "Retry-After", "1")},
	"a quarantine page":         {Query, get("/v1/quarantine", "", 200, `{"records":[{"received_at":"2026-11-22T10:00:00.5Z","reason":"id: is required","raw":"e30=","origin":{"request_id":"r","index":0}}],"next_cursor":"","plan":`+plan+`}`)},
	"counts":                    {Query, get("/v1/counts", "source=s&group_by=type&interval=1h", 200, `{"interval":"1h","from":"2026-11-22T10:00:00Z","to":"2026-11-22T11:00:00Z","series":[{"type":"t","points":[{"t":"2026-11-22T10:00:00Z","count":3}]}],"plan":{"requests":1,"consumed_rcu":0.5}}`)},
	"sources":                   {Query, get("/v1/sources", "limit=1", 200, `{"sources":[{"source":"s","days":["2026-11-22"]}],"next_cursor":"abc"}`)},
	"the function's 404":        {Query, get("/v1/nothing", "", 404, `{"error":"no route GET /v1/nothing"}`)},
	"the function's 405":        {Ingest, get("/v1/events", "", 405, `{"error":"method GET not allowed on /v1/events; use POST"}`, "Allow", "POST")},
	"API Gateway's 404":         {Any, get("/nowhere", "", 404, `{"message":"Not Found"}`)},
	"accepted":                  {Ingest, post("application/json", event, 202, `{"accepted":1,"rejected":[]}`)},
	"no content type":           {Ingest, post("", event, 202, `{"accepted":1,"rejected":[]}`)},
	"a batch, one rejected":     {Ingest, post("application/cloudevents-batch+json", `[`+event+`,{"id":"2"}]`, 202, `{"accepted":1,"rejected":[{"index":1,"id":"2","error":"source: is required"}]}`)},
	"none valid":                {Ingest, post("application/json", `{"id":"2"}`, 400, `{"accepted":0,"rejected":[{"index":0,"id":"2","error":"source: is required"}]}`)},
	"no events":                 {Ingest, post("application/json", `[]`, 400, `{"accepted":0,"rejected":[],"error":"body: holds no events"}`)},
	"too large, by the gateway": {Any, post("application/json", `[]`, 413, `{"message":"Request Entity Too Large"}`)},
	"unavailable":               {Ingest, post("application/json", event, 503, `{"error":"storage is unavailable","accepted":0,"rejected":[],"retry":[{"index":0,"id":"1","error":"not stored"}]}`, "Retry-After", "1")},
	"binary mode": {Ingest, Exchange{Method: "POST", Path: "/v1/events", Body: []byte(`{"any":"data"}`),
		Header: http.Header{"Content-Type": {"application/json"}, "Ce-Specversion": {"1.0"}, "Ce-Id": {"1"}, "Ce-Source": {"s"}, "Ce-Type": {"t"}},
		Status: 202, RespHeader: jsonHeader(), RespBody: []byte(`{"accepted":1,"rejected":[]}`)}},
	"the document": {DevServer, Exchange{Method: "GET", Path: "/openapi.yaml", Status: 200,
		RespHeader: http.Header{"Content-Type": {"application/yaml"}}, RespBody: []byte("openapi: 3.1.0\ninfo: {title: t, version: '1'}\npaths: {}\n")}},
}

func TestRightAnswersPass(t *testing.T) {
	for name, c := range rightAnswers {
		t.Run(name, func(t *testing.T) {
			ch, err := New(c.f)
			if err != nil {
				t.Fatal(err)
			}
			if err := ch.Check(context.Background(), c.x); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// wrongAnswers are exchanges the document does not allow, each with what
// the error must mention: the check cannot pass them silently.
var wrongAnswers = map[string]struct {
	f    Function
	x    Exchange
	want string
}{
	"no plan":                         {Query, get("/v1/events", "source=s", 200, `{"events":[]}`), "plan"},
	"an undocumented member":          {Query, get("/v1/events", "source=s", 200, `{"events":[],"next_cursor":"","plan":`+plan+`,"total":3}`), "total"},
	"an unknown path":                 {Query, get("/v1/events", "source=s", 200, `{"events":[],"next_cursor":"","plan":{"path":"index","reason":"r","requests":1,"consumed_rcu":0}}`), "path"},
	"an event without time":           {Query, get("/v1/events", "source=s", 200, `{"events":[{"specversion":"1.0","id":"1","source":"s","type":"t"}],"next_cursor":"","plan":`+plan+`}`), "time"},
	"a local time":                    {Query, get("/v1/events", "source=s", 200, `{"events":[{"specversion":"1.0","id":"1","source":"s","type":"t","time":"2026-11-22T10:00:00+01:00"}],"next_cursor":"","plan":`+plan+`}`), "time"},
	"a 503 without a wait":            {Query, get("/v1/events", "source=s", 503, `{"error":"storage is unavailable"}`), "Retry-After"},
	"a 500 shaped as ours":            {Query, get("/v1/events", "source=s", 500, `{"error":"boom"}`), "message"},
	"an undocumented status":          {Query, get("/v1/events", "source=s", 418, `{"error":"teapot"}`), "status"},
	"not JSON":                        {Query, Exchange{Method: "GET", Path: "/v1/events", RawQuery: "source=s", Status: 200, RespHeader: http.Header{"Content-Type": {"text/plain"}}, RespBody: []byte("ok")}, "Content-Type"},
	"a 2m interval":                   {Query, get("/v1/counts", "source=s", 200, `{"interval":"2m","from":"2026-11-22T10:00:00Z","to":"2026-11-22T11:00:00Z","series":[],"plan":{"requests":1,"consumed_rcu":0}}`), "interval"},
	"a negative count":                {Query, get("/v1/counts", "source=s", 200, `{"interval":"1h","from":"2026-11-22T10:00:00Z","to":"2026-11-22T11:00:00Z","series":[{"points":[{"t":"2026-11-22T10:00:00Z","count":-1}]}],"plan":{"requests":1,"consumed_rcu":0}}`), "count"},
	"a source without days":           {Query, get("/v1/sources", "", 200, `{"sources":[{"source":"s","days":[]}],"next_cursor":""}`), "days"},
	"a last page without next_cursor": {Query, get("/v1/events", "source=s", 200, `{"events":[],"plan":`+plan+`}`), "next_cursor"},
	"quarantine without next_cursor":  {Query, get("/v1/quarantine", "", 200, `{"records":[],"plan":`+plan+`}`), "next_cursor"},
	"sources without next_cursor":     {Query, get("/v1/sources", "", 200, `{"sources":[]}`), "next_cursor"},
	"a 405 without Allow":             {Ingest, get("/v1/events", "", 405, `{"error":"use POST"}`), "Allow"},
	"an unrouted 200":                 {Any, get("/nowhere", "", 200, `{}`), "404 or 405"},
	"202 storing nothing":             {Ingest, post("application/json", event, 202, `{"accepted":0,"rejected":[{"index":0,"error":"id: x"}]}`), "accepted"},
	"400 that stored":                 {Ingest, post("application/json", event, 400, `{"accepted":1,"rejected":[]}`), "accepted"},
	"503 without retry":               {Ingest, post("application/json", event, 503, `{"error":"e","accepted":0,"rejected":[]}`, "Retry-After", "1"), "retry"},
	"a rejection without why":         {Ingest, post("application/json", event, 202, `{"accepted":1,"rejected":[{"index":1}]}`), "error"},
	"a 200 to a bad limit":            {Query, get("/v1/events", "source=s&limit=0", 200, `{"events":[],"next_cursor":"","plan":`+plan+`}`), "limit"},
	"a 200 to a bad order":            {Query, get("/v1/events", "source=s&order=up", 200, `{"events":[],"next_cursor":"","plan":`+plan+`}`), "order"},
	"a 200 to a bad time":             {Query, get("/v1/events", "source=s&from=yesterday", 200, `{"events":[],"next_cursor":"","plan":`+plan+`}`), "from"},
	"a 200 without source":            {Query, get("/v1/events", "", 200, `{"events":[],"next_cursor":"","plan":`+plan+`}`), "source"},
	"an event without type, accepted": {Ingest, post("application/json", `{"id":"1","source":"s"}`, 202, `{"accepted":1,"rejected":[]}`), "type"},
	"an upper-case name, accepted":    {Ingest, post("application/json", `{"id":"1","source":"s","type":"t","Ext":1}`, 202, `{"accepted":1,"rejected":[]}`), "Ext"},
	"1,001 events, accepted": {Ingest, post("application/cloudevents-batch+json", "["+strings.TrimSuffix(strings.Repeat(event+",", 1001), ",")+"]", 202,
		`{"accepted":1001,"rejected":[]}`), "1,000"},
}

func TestWrongAnswersAreCaught(t *testing.T) {
	for name, c := range wrongAnswers {
		t.Run(name, func(t *testing.T) {
			ch, err := New(c.f)
			if err != nil {
				t.Fatal(err)
			}
			err = ch.Check(context.Background(), c.x)
			if err == nil {
				t.Fatal("the check passed it")
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("the error does not mention %q: %v", c.want, err)
			}
		})
	}
}

// recorder is a testing.TB that records what would fail a test.
type recorder struct {
	testing.TB
	mu   sync.Mutex
	errs []string
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

// TestCheckHTTPFailsTheTest: a handler's wrong answer, given to the helper
// the API tests call, fails the test; a right one does not.
func TestCheckHTTPFailsTheTest(t *testing.T) {
	req := events.APIGatewayV2HTTPRequest{Version: "2.0", RawPath: "/v1/events", RawQueryString: "source=s"}
	req.RequestContext.HTTP.Method = "GET"
	right := events.APIGatewayV2HTTPResponse{StatusCode: 200, Headers: map[string]string{"Content-Type": "application/json"},
		Body: `{"events":[],"next_cursor":"","plan":` + plan + `}`}
	wrong := right
	wrong.Body = `{"events":[],"next_cursor":""}`

	r := &recorder{TB: t}
	CheckHTTP(r, Query, req, right)
	if len(r.errs) != 0 {
		t.Fatalf("a right answer failed the test: %v", r.errs)
	}
	CheckHTTP(r, Query, req, wrong)
	if len(r.errs) != 1 || !strings.Contains(r.errs[0], "plan") {
		t.Fatalf("a wrong answer gave %q; want one error about the plan", r.errs)
	}

	rest := events.APIGatewayProxyRequest{HTTPMethod: "GET", Path: "/v1/events", QueryStringParameters: map[string]string{"source": "s"}}
	CheckREST(r, Query, rest, events.APIGatewayProxyResponse{StatusCode: 200, Headers: right.Headers, Body: wrong.Body})
	if len(r.errs) != 2 {
		t.Fatalf("a wrong REST answer passed: %q", r.errs)
	}
}
