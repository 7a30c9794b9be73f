package main

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/shardline/shardline/internal/ingest"
	"github.com/shardline/shardline/internal/query"
	"github.com/shardline/shardline/internal/tenant"
	"github.com/shardline/shardline/local/devserver"
	"github.com/shardline/shardline/local/httpapi"
	"github.com/shardline/shardline/testkit/openapitest"
	"github.com/shardline/shardline/testkit/testddb"
)

// tenantAPI serves, through the real handlers with two tenants, the
// /v1/... routes and the tenants' routes as make run -tenants does.
func tenantAPI(t *testing.T) string {
	t.Helper()
	tenants, err := tenant.Parse([]byte(`{"team-a": {"sources": ["team-a/"]}, "team-b": {"sources": ["team-b/"]}}`))
	if err != nil {
		t.Fatal(err)
	}
	table := testddb.Table(t)
	client := testddb.Client(t, testddb.Endpoint(t))
	icfg := ingest.DefaultConfig(table)
	icfg.Tenants = tenants
	h := ingest.New(icfg, client, ingest.Options{})
	qh := query.New(query.Config{Table: table, Tenants: tenants}, client, query.Options{})
	checked := func(fn httpapi.Func) httpapi.Func {
		return func(ctx context.Context, req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
			resp, err := fn(ctx, req)
			if err == nil {
				openapitest.CheckHTTP(t, openapitest.Any, req, resp)
			}
			return resp, err
		}
	}
	mux := httpapi.NewMux()
	mux.Handle("POST "+ingest.Route, checked(h.HTTP))
	mux.Handle("GET "+query.EventsRoute, checked(qh.HTTP))
	post, get := devserver.TenantRoutes(tenants)
	for _, k := range post {
		mux.Handle(k, checked(h.HTTP))
	}
	for _, k := range get {
		mux.Handle(k, checked(qh.HTTP))
	}
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestTenantFlag: send, query, counts and quarantine list with -tenant
// use the tenant's routes,
// which take the tenant's sources and refuse another's with the API's
// 403, saying so.
func TestTenantFlag(t *testing.T) {
	localEnv(t)
	base := tenantAPI(t)
	at := time.Now().Add(-time.Minute)
	own := writeFile(t, "own.ndjson", event("team-a/orders", "a-1", "placed", at), event("team-a/orders", "a-2", "placed", at))
	if code, out, errs := sh("send", "-api", base, "-tenant", "team-a", own); code != 0 || !strings.Contains(out, "/v1/tenants/team-a/events") {
		t.Fatalf("send -tenant team-a: code %d\nout %s\nerr %s", code, out, errs)
	}
	foreign := writeFile(t, "foreign.ndjson", event("team-b/orders", "b-1", "placed", at))
	code, _, errs := sh("send", "-api", base, "-tenant", "team-a", foreign)
	if code != 1 || !strings.Contains(errs, `producer: POST /v1/tenants/team-a/events: 403 Forbidden: {"error":"source: \"team-b/orders\" is not a source of tenant team-a"}`) ||
		!strings.Contains(errs, "a tenant's routes take only the tenant's sources") {
		t.Fatalf("send -tenant team-a of team-b's: code %d, err %s", code, errs)
	}
	if code, _, errs := sh("send", "-stream", "s", "-tenant", "team-a", own); code != 1 || !strings.Contains(errs, "-tenant is for the API's routes") {
		t.Fatalf("send -stream -tenant: code %d, err %s", code, errs)
	}
	code, out, errs := sh("query", "-api", base, "-tenant", "team-a", "-source", "team-a/orders", "-from", "1h")
	if code != 0 || strings.Count(out, `"team-a/orders"`) != 2 {
		t.Fatalf("query -tenant team-a: code %d\nout %s\nerr %s", code, out, errs)
	}
	code, _, errs = sh("query", "-api", base, "-tenant", "team-b", "-source", "team-a/orders", "-from", "1h")
	if code != 1 || !strings.Contains(errs, "GET /v1/tenants/team-b/events: 403") {
		t.Fatalf("query -tenant team-b of team-a's: code %d, err %s", code, errs)
	}
	if code, _, errs := sh("query", "-api", base, "-tenant", "Team-A", "-source", "team-a/orders"); code != 1 || !strings.Contains(errs, "-tenant: tenant name") {
		t.Fatalf("-tenant Team-A: code %d, err %s", code, errs)
	}
	if code, _, errs := sh("quarantine", "list", "-from", "1h", "-api", base, "-tenant", "team-a"); code != 0 || !strings.Contains(errs, "(from "+base+"/v1/tenants/team-a/quarantine)") {
		t.Fatalf("quarantine list -tenant team-a: code %d, err %s", code, errs)
	}
	code, _, errs = sh("counts", "-api", base, "-tenant", "team-a", "-source", "team-b/orders")
	if code != 1 || !strings.Contains(errs, "GET /v1/tenants/team-a/counts: 403") {
		t.Fatalf("counts -tenant team-a of team-b's: code %d, err %s", code, errs)
	}
}
