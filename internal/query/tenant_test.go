package query

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/shardline/shardline/internal/apigw"
	"github.com/shardline/shardline/internal/ingest"
	"github.com/shardline/shardline/internal/tenant"
	"github.com/shardline/shardline/testkit/faultproxy"
	"github.com/shardline/shardline/testkit/openapitest"
	"github.com/shardline/shardline/testkit/testddb"
)

const (
	tenantAReader = "AROATEAMAREADER000001"
	tenantAWriter = "AROATEAMAWRITER000001"
	tenantAStream = "arn:aws:kinesis:us-east-1:000000000000:stream/tenant-team-a"
)

// queryTenants are team-a (its own stream), team-b and a tenant named v1,
// as the functions read them from the environment.
func queryTenants(t testing.TB) *tenant.Config {
	t.Helper()
	env := map[string]string{
		tenant.EnvTenants: `{"team-a": {"sources": ["team-a/", "urn:a:"], "stream": true}, "team-b": {"sources": ["team-b/"]}, "v1": {"sources": ["v1/"]}}`,
		tenant.EnvStreams: `{"team-a": "` + tenantAStream + `"}`,
		tenant.EnvRoles:   `{"team-a": {"writer": "` + tenantAWriter + `", "reader": "` + tenantAReader + `"}}`,
	}
	c, err := tenant.FromEnv(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// tenantWorld is a table holding, through the real ingest handler with
// tenants: team-a's events (team-a/x, urn:a:y) and an invalid event on its
// route, a foreign record on its stream; team-b's event and an invalid
// one; and a shared source's on /v1/events with an invalid one. Its
// query handler reads through a fault proxy that counts requests.
type tenantWorld struct {
	table string
	proxy *faultproxy.Proxy
	h     *Handler
}

func newTenantWorld(t testing.TB) *tenantWorld {
	t.Helper()
	w := &tenantWorld{table: testddb.Table(t)}
	cfg := ingest.DefaultConfig(w.table)
	cfg.Tenants = queryTenants(t)
	in := ingest.New(cfg, testddb.Client(t, testddb.Endpoint(t)), ingest.Options{Now: func() time.Time { return now }})
	ev := func(id, source string, ago int) string {
		return fmt.Sprintf(`{"specversion":"1.0","id":%q,"source":%q,"type":"t","time":%q}`, id, source, now.Add(-time.Duration(ago)*time.Minute).Format(time.RFC3339))
	}
	post := func(path string, evs ...string) {
		req := events.APIGatewayV2HTTPRequest{Version: "2.0", RouteKey: "POST " + path, RawPath: path, Body: "[" + strings.Join(evs, ",") + "]",
			Headers: map[string]string{"content-type": "application/json"}}
		req.RequestContext.HTTP.Method = "POST"
		req.RequestContext.RequestID = "req-" + path
		req.RequestContext.TimeEpoch = now.Add(-time.Minute).UnixMilli()
		if resp, _ := in.HTTP(loading(t), req); resp.StatusCode != 202 {
			t.Fatalf("POST %s: %d %s", path, resp.StatusCode, resp.Body)
		}
	}
	bad := func(id, source string) string {
		return fmt.Sprintf(`{"specversion":"1.0","id":%q,"source":%q}`, id, source)
	}
	post("/v1/tenants/team-a/events", ev("a-1", "team-a/x", 10), ev("a-2", "team-a/x", 20), ev("a-3", "team-a/x", 30), ev("a-4", "urn:a:y", 5), bad("a-bad", "team-a/x"))
	post("/v1/tenants/team-b/events", ev("b-1", "team-b/y", 10), bad("b-bad", "team-b/y"))
	post("/v1/events", ev("s-1", "shared/z", 10), bad("s-bad", "shared/z"))
	rec := events.KinesisEventRecord{EventSource: "aws:kinesis", EventSourceArn: tenantAStream, EventID: "shardId-000000000001:1",
		Kinesis: events.KinesisRecord{Data: []byte(ev("b-2", "team-b/y", 3)), SequenceNumber: "1",
			ApproximateArrivalTimestamp: events.SecondsEpochTime{Time: now.Add(-2 * time.Minute)}}}
	if resp, err := in.Kinesis(loading(t), events.KinesisEvent{Records: []events.KinesisEventRecord{rec}}); err != nil || len(resp.BatchItemFailures) > 0 {
		t.Fatalf("%v %v", err, resp)
	}
	w.proxy = faultproxy.For(t, testddb.Endpoint(t))
	w.h = New(Config{Table: w.table, Tenants: queryTenants(t)}, testddb.Client(t, w.proxy.URL), Options{Now: func() time.Time { return now }})
	return w
}

// requests is how many DynamoDB requests the query handler made.
func (w *tenantWorld) requests() int64 {
	var n int64
	for _, op := range []string{"Query", "GetItem", "BatchGetItem", "Scan"} {
		n += w.proxy.Count(op)
	}
	return n
}

// tenantGet is the fixture events/api-query-v2.json sent to route key
// "GET <path>" with query q, by team-a's reader role.
func tenantGet(t testing.TB, h *Handler, path string, q url.Values) (int, string) {
	t.Helper()
	b, err := os.ReadFile("../../events/api-query-v2.json")
	if err != nil {
		t.Fatal(err)
	}
	var req events.APIGatewayV2HTTPRequest
	if err := json.Unmarshal(b, &req); err != nil {
		t.Fatal(err)
	}
	req.RouteKey, req.RawPath, req.RawQueryString = "GET "+path, path, q.Encode()
	req.RequestContext.RouteKey, req.RequestContext.HTTP.Path = req.RouteKey, path
	req.RequestContext.Authorizer = &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
		IAM: &events.APIGatewayV2HTTPRequestContextAuthorizerIAMDescription{
			UserARN: "arn:aws:sts::000000000000:assumed-role/TenantTeamXaReader/dash", UserID: tenantAReader + ":dash"}}
	resp, err := h.HTTP(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	openapitest.CheckHTTP(t, openapitest.Query, req, resp)
	return resp.StatusCode, resp.Body
}

var lastDay = url.Values{"from": {now.Add(-24 * time.Hour).Format(time.RFC3339)}, "to": {now.Format(time.RFC3339)}}

func with(q url.Values, kv ...string) url.Values {
	out := url.Values{}
	for k, v := range q {
		out[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		out.Set(kv[i], kv[i+1])
	}
	return out
}

// TestTenantReadRefusals: a read naming a source outside the tenant is
// DESIGN.md's 403, an unknown tenant a 404, another role a 403, and a
// tenant named v1 is a tenant: none reads DynamoDB.
func TestTenantReadRefusals(t *testing.T) {
	w := newTenantWorld(t)
	for _, c := range []struct {
		path   string
		q      url.Values
		status int
		body   string
	}{
		{"/v1/tenants/team-a/events", with(lastDay, "source", "team-b/y"), 403, `{"error":"source: \"team-b/y\" is not a source of tenant team-a"}`},
		{"/v1/tenants/team-a/events", with(lastDay, "source", "shared/z", "consistent", "true"), 403, `{"error":"source: \"shared/z\" is not a source of tenant team-a"}`},
		{"/v1/tenants/team-a/counts", with(lastDay, "source", "team-b/y"), 403, `{"error":"source: \"team-b/y\" is not a source of tenant team-a"}`},
		{"/v1/tenants/v1/events", with(lastDay, "source", "team-a/x"), 403, `{"error":"source: \"team-a/x\" is not a source of tenant v1"}`},
		{"/v1/tenants/team-c/events", with(lastDay, "source", "team-a/x"), 404, "no tenant"},
		{"/v1/tenants/team-a%2F/sources", lastDay, 404, "no tenant"},
		{"/v1/tenants/team-a/nothing", lastDay, 404, "no route"},
	} {
		before := w.requests()
		status, body := tenantGet(t, w.h, c.path, c.q)
		if status != c.status || (!strings.Contains(body, c.body)) {
			t.Errorf("GET %s?%s: %d %s, want %d %s", c.path, c.q.Encode(), status, body, c.status, c.body)
		}
		if n := w.requests() - before; n != 0 {
			t.Errorf("GET %s: %d DynamoDB requests, want none", c.path, n)
		}
	}
	// team-a's reader may not read v1's routes... nor is it v1's reader: v1
	// has no roles, so IAM alone decides, and the source check holds.
	// Another stack role on team-a's routes is refused:
	b, _ := os.ReadFile("../../events/api-query-v2.json")
	var req events.APIGatewayV2HTTPRequest
	_ = json.Unmarshal(b, &req)
	req.RouteKey, req.RawPath, req.RawQueryString = "GET /v1/tenants/team-a/events", "/v1/tenants/team-a/events", with(lastDay, "source", "team-a/x").Encode()
	req.RequestContext.Authorizer = &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
		IAM: &events.APIGatewayV2HTTPRequestContextAuthorizerIAMDescription{UserARN: "arn:aws:sts::0:assumed-role/w/s", UserID: tenantAWriter + ":s"}}
	if resp, _ := w.h.HTTP(context.Background(), req); resp.StatusCode != 403 || !strings.Contains(resp.Body, "reader role") {
		t.Errorf("team-a's writer reading: %d %s", resp.StatusCode, resp.Body)
	}
	// The tenant's own source is served, as on /v1/events.
	status, body := tenantGet(t, w.h, "/v1/tenants/team-a/events", with(lastDay, "source", "team-a/x"))
	var er EventsResponse
	if status != 200 || json.Unmarshal([]byte(body), &er) != nil || len(er.Events) != 3 {
		t.Errorf("own source: %d %.300s", status, body)
	}
	status, body = tenantGet(t, w.h, "/v1/tenants/team-a/counts", with(lastDay, "source", "urn:a:y", "interval", "1h"))
	if status != 200 || !strings.Contains(body, `"series":[{"points":[`) { // counts come from the counter function, not run here
		t.Errorf("own counts: %d %.300s", status, body)
	}
}

// TestTenantSourcesAndQuarantineAreTheTenants: a tenant's sources and
// quarantine list only its own, where the /v1/... routes list all.
func TestTenantSourcesAndQuarantineAreTheTenants(t *testing.T) {
	w := newTenantWorld(t)
	sources := func(path string) []string {
		status, body := tenantGet(t, w.h, path, lastDay)
		var r struct {
			Sources []struct{ Source string } `json:"sources"`
		}
		if status != 200 || json.Unmarshal([]byte(body), &r) != nil {
			t.Fatalf("GET %s: %d %s", path, status, body)
		}
		var out []string
		for _, s := range r.Sources {
			out = append(out, s.Source)
		}
		return out
	}
	if got := strings.Join(sources("/v1/tenants/team-a/sources"), ","); got != "team-a/x,urn:a:y" {
		t.Errorf("team-a's sources: %s", got)
	}
	if got := strings.Join(sources("/v1/tenants/team-b/sources"), ","); got != "team-b/y" {
		t.Errorf("team-b's sources: %s", got)
	}
	if got := strings.Join(sources("/v1/sources"), ","); got != "shared/z,team-a/x,team-b/y,urn:a:y" {
		t.Errorf("all sources: %s", got)
	}
	quarantine := func(path string) []Record {
		status, body := tenantGet(t, w.h, path, lastDay)
		var r QuarantineResponse
		if status != 200 || json.Unmarshal([]byte(body), &r) != nil {
			t.Fatalf("GET %s: %d %s", path, status, body)
		}
		return r.Records
	}
	a := quarantine("/v1/tenants/team-a/quarantine")
	if len(a) != 2 {
		t.Errorf("team-a's quarantine holds %d records, want its invalid event and its stream's foreign record: %+v", len(a), a)
	}
	for _, r := range a {
		if r.Origin["tenant"] != "team-a" {
			t.Errorf("team-a's quarantine lists %+v", r)
		}
	}
	if b := quarantine("/v1/tenants/team-b/quarantine"); len(b) != 1 || b[0].Origin["tenant"] != "team-b" {
		t.Errorf("team-b's quarantine: %+v", b)
	}
	if v := quarantine("/v1/tenants/v1/quarantine"); len(v) != 0 {
		t.Errorf("v1's quarantine: %+v", v)
	}
	if all := quarantine(QuarantineRoute); len(all) != 4 {
		t.Errorf("the quarantine holds %d records, want 4", len(all))
	}
}

// TestTenantCursorsStayOnTheirRouteAndTenant: a cursor is a 400 on any
// route or tenant but the one that issued it, and works there.
func TestTenantCursorsStayOnTheirRouteAndTenant(t *testing.T) {
	w := newTenantWorld(t)
	cursorOf := func(path string, q url.Values) string {
		status, body := tenantGet(t, w.h, path, q)
		var r struct {
			Next string `json:"next_cursor"`
		}
		if status != 200 || json.Unmarshal([]byte(body), &r) != nil || r.Next == "" {
			t.Fatalf("GET %s?%s: %d %.300s", path, q.Encode(), status, body)
		}
		return r.Next
	}
	evQ := with(lastDay, "source", "team-a/x", "limit", "1")
	events := cursorOf("/v1/tenants/team-a/events", evQ)
	quarantine := cursorOf("/v1/tenants/team-a/quarantine", with(lastDay, "limit", "1"))
	sources := cursorOf("/v1/tenants/team-a/sources", with(lastDay, "limit", "1"))
	plainEvents := cursorOf(EventsRoute, evQ)
	plainQuarantine := cursorOf(QuarantineRoute, with(lastDay, "limit", "1"))
	plainSources := cursorOf(SourcesRoute, with(lastDay, "limit", "1"))
	for _, c := range []struct {
		name, path string
		q          url.Values
	}{
		{"team-a's events cursor on /v1/events", EventsRoute, with(evQ, "cursor", events)},
		{"/v1/events' cursor on team-a's events", "/v1/tenants/team-a/events", with(evQ, "cursor", plainEvents)},
		{"team-a's events cursor on its quarantine", "/v1/tenants/team-a/quarantine", with(lastDay, "limit", "1", "cursor", events)},
		{"team-a's quarantine cursor on /v1/quarantine", QuarantineRoute, with(lastDay, "limit", "1", "cursor", quarantine)},
		{"team-a's quarantine cursor on team-b's", "/v1/tenants/team-b/quarantine", with(lastDay, "limit", "1", "cursor", quarantine)},
		{"/v1/quarantine's cursor on team-a's", "/v1/tenants/team-a/quarantine", with(lastDay, "limit", "1", "cursor", plainQuarantine)},
		{"team-a's sources cursor on /v1/sources", SourcesRoute, with(lastDay, "limit", "1", "cursor", sources)},
		{"team-a's sources cursor on team-b's", "/v1/tenants/team-b/sources", with(lastDay, "limit", "1", "cursor", sources)},
		{"/v1/sources' cursor on team-a's", "/v1/tenants/team-a/sources", with(lastDay, "limit", "1", "cursor", plainSources)},
	} {
		if status, body := tenantGet(t, w.h, c.path, c.q); status != 400 || !strings.Contains(body, "cursor") {
			t.Errorf("%s: %d %s, want a 400 naming the cursor", c.name, status, body)
		}
	}
	for path, q := range map[string]url.Values{
		"/v1/tenants/team-a/events":     with(evQ, "cursor", events),
		"/v1/tenants/team-a/quarantine": with(lastDay, "limit", "1", "cursor", quarantine),
		"/v1/tenants/team-a/sources":    with(lastDay, "limit", "1", "cursor", sources),
	} {
		if status, body := tenantGet(t, w.h, path, q); status != 200 {
			t.Errorf("%s with its own cursor: %d %s", path, status, body)
		}
	}
}

// FuzzTenantRoutes sends reads and writes with any route key, path and
// source, and checks the invariant: a tenant's route never stores or
// returns a source outside the tenant, nor a quarantined record of
// another, and nothing answers 500. Its seeds run in go test.
func FuzzTenantRoutes(f *testing.F) {
	for _, s := range [][4]string{
		{"GET", "GET /v1/tenants/team-a/events", "/v1/tenants/team-a/events", "team-b/y"},
		{"GET", "GET /v1/tenants/team-a/events", "/v1/events", "team-a/x"},
		{"GET", "GET /v1/events", "/v1/tenants/v1/events", "team-b/y"},
		{"GET", "", "/v1/tenants/v1/events", "shared/z"},
		{"GET", "", "/prod/v1/tenants/team-a/sources", ""},
		{"GET", "GET /v1/tenants/team-a/quarantine", "/v1/tenants/team-a/quarantine", ""},
		{"GET", "GET /v1/tenants/team-b/counts", "/v1/tenants/team-b/counts", "team-a/x"},
		{"GET", "GET /v1/tenants/{tenant}/events", "/v1/tenants/team-a/events", "team-b/y"},
		{"POST", "POST /v1/tenants/team-a/events", "/v1/tenants/team-a/events", "team-b/new"},
		{"POST", "POST /v1/tenants/team-a/events", "/v1/tenants/team-a/events", "team-a/new"},
		{"POST", "POST /v1/events", "/v1/tenants/team-a/events", "team-b/new"},
		{"POST", "", "/v1/tenants/v1/events", "team-a"},
		{"POST", "POST /v1/tenants/v1/events", "/v1/tenants/v1/events", "v1/ok"},
	} {
		f.Add(s[0], s[1], s[2], s[3])
	}
	w := newTenantWorld(f)
	cfg := ingest.DefaultConfig(w.table)
	cfg.Tenants = queryTenants(f)
	in := ingest.New(cfg, testddb.Client(f, testddb.Endpoint(f)), ingest.Options{Now: func() time.Time { return now }})
	f.Fuzz(func(t *testing.T, method, routeKey, path, source string) {
		req := events.APIGatewayV2HTTPRequest{Version: "2.0", RouteKey: routeKey, RawPath: path,
			RawQueryString: with(lastDay, "source", source).Encode(), Headers: map[string]string{"content-type": "application/json"}}
		req.RequestContext.HTTP.Method = method
		req.PathParameters = map[string]string{"tenant": "team-a"}
		rt := apigw.FromHTTP(req).Route()
		owns := func(s string) bool { return w.h.tenants.Owns(rt.Tenant, s) }
		if method == "POST" {
			b, _ := json.Marshal(map[string]string{"specversion": "1.0", "id": "fz", "source": source, "type": "t", "time": now.Add(-time.Minute).Format(time.RFC3339)})
			req.Body = string(b)
			resp, _ := in.HTTP(context.Background(), req)
			if resp.StatusCode >= 500 {
				t.Fatalf("%s %q %q: %d %s", method, routeKey, path, resp.StatusCode, resp.Body)
			}
			if rt.Tenanted && resp.StatusCode/100 == 2 && !owns(source) {
				t.Fatalf("%q %q stored %q, not tenant %q's: %d %s", routeKey, path, source, rt.Tenant, resp.StatusCode, resp.Body)
			}
			return
		}
		resp, _ := w.h.HTTP(context.Background(), req)
		if resp.StatusCode >= 500 {
			t.Fatalf("%s %q %q: %d %s", method, routeKey, path, resp.StatusCode, resp.Body)
		}
		if !rt.Tenanted || resp.StatusCode != 200 {
			return
		}
		var r struct {
			Events  []struct{ Source string } `json:"events"`
			Sources []struct{ Source string } `json:"sources"`
			Records []Record                  `json:"records"`
		}
		if err := json.Unmarshal([]byte(resp.Body), &r); err != nil {
			t.Fatal(err)
		}
		for _, e := range append(r.Events, r.Sources...) {
			if !owns(e.Source) {
				t.Fatalf("%q %q returned %q, not tenant %q's", routeKey, path, e.Source, rt.Tenant)
			}
		}
		if rt.Is(CountsRoute) && !owns(source) {
			t.Fatalf("%q %q counted %q, not tenant %q's", routeKey, path, source, rt.Tenant)
		}
		for _, rec := range r.Records {
			if rec.Origin["tenant"] != rt.Tenant {
				t.Fatalf("%q %q listed a record of %v", routeKey, path, rec.Origin["tenant"])
			}
		}
	})
}
