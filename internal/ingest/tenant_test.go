package ingest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/shardline/shardline/internal/emf"
	"github.com/shardline/shardline/internal/item"
	"github.com/shardline/shardline/internal/schema"
	"github.com/shardline/shardline/internal/tenant"
	"github.com/shardline/shardline/testkit/testddb"
)

// Role ids and streams of the tenants the tenant tests use.
const (
	teamAWriter = "AROATEAMAWRITER000001"
	teamAReader = "AROATEAMAREADER000001"
	teamBWriter = "AROATEAMBWRITER000001"
	teamAStream = "arn:aws:kinesis:us-east-1:000000000000:stream/tenant-team-a"
)

// testTenants are team-a (its own stream), team-b and a tenant named v1,
// with roles for team-a and team-b, as tenant.FromEnv reads them.
func testTenants(t testing.TB) *tenant.Config {
	t.Helper()
	env := map[string]string{
		tenant.EnvTenants: `{"team-a": {"sources": ["team-a/", "urn:a:"], "stream": true}, "team-b": {"sources": ["team-b/"]}, "v1": {"sources": ["v1/"]}}`,
		tenant.EnvStreams: `{"team-a": "` + teamAStream + `"}`,
		tenant.EnvRoles: `{"team-a": {"writer": "` + teamAWriter + `", "reader": "` + teamAReader + `"},
			"team-b": {"writer": "` + teamBWriter + `", "reader": "AROATEAMBREADER000001"}}`,
	}
	c, err := tenant.FromEnv(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// tenantEnv is a table behind a fault proxy, which counts every DynamoDB
// request, and a handler with testTenants whose log and metrics go to log.
type tenantEnv struct {
	*env
	h   apiHandler // checked against the OpenAPI document
	log *syncBuffer
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func newTenantEnv(t *testing.T) *tenantEnv {
	t.Helper()
	e := newEnv(t, true, func(c *Config) { c.Tenants = testTenants(t) })
	out := &syncBuffer{}
	log := slog.New(slog.NewJSONHandler(out, nil))
	h := New(e.cfg, testddb.Client(t, e.via), Options{Now: func() time.Time { return fixtureNow }, Logger: log,
		Metrics: emf.NewInLog(out, map[string]string{"Function": FunctionName})})
	return &tenantEnv{env: e, h: checked(t, h), log: out}
}

// requests is how many DynamoDB requests of any kind reached the table.
func (e *tenantEnv) requests() int64 {
	var n int64
	for _, op := range []string{"BatchWriteItem", "PutItem", "UpdateItem", "GetItem", "Query", "BatchGetItem", "DeleteItem", "TransactWriteItems"} {
		n += e.proxy.Count(op)
	}
	return n
}

// tenantRequest is the fixture testdata/tenant-ingest-v2.json, a request
// to team-a's route by team-a's writer role, with body and, when not
// empty, the route key of path.
func tenantRequest(t testing.TB, path, body string) events.APIGatewayV2HTTPRequest {
	t.Helper()
	b, err := os.ReadFile("testdata/tenant-ingest-v2.json")
	if err != nil {
		t.Fatal(err)
	}
	var req events.APIGatewayV2HTTPRequest
	if err := json.Unmarshal(b, &req); err != nil {
		t.Fatal(err)
	}
	if path != "" {
		req.RouteKey, req.RawPath = "POST "+path, path
		req.RequestContext.RouteKey, req.RequestContext.HTTP.Path = req.RouteKey, path
	}
	if body != "" {
		req.Body = body
	}
	return req
}

func event(id, source string) string {
	return fmt.Sprintf(`{"specversion": "1.0", "id": %q, "source": %q, "type": "t", "time": "2026-11-22T11:50:00Z"}`, id, source)
}

// TestTenantOwnSourcesAreStored: the fixture, and an array of the
// tenant's two prefixes, are stored as on /v1/events; an invalid event of
// the tenant's is quarantined with the tenant in its origin.
func TestTenantOwnSourcesAreStored(t *testing.T) {
	e := newTenantEnv(t)
	resp, _ := e.h.HTTP(context.Background(), tenantRequest(t, "", ""))
	if resp.StatusCode != 202 {
		t.Fatalf("fixture: %d %s", resp.StatusCode, resp.Body)
	}
	body := "[" + event("a-2", "urn:a:x") + `, {"specversion": "1.0", "id": "a-3", "source": "team-a/bad"}]`
	req := tenantRequest(t, "", body)
	req.Headers["content-type"] = "application/json"
	if resp, _ = e.h.HTTP(context.Background(), req); resp.StatusCode != 202 || !strings.Contains(resp.Body, `"accepted":1`) {
		t.Fatalf("array: %d %s", resp.StatusCode, resp.Body)
	}
	st := testddb.StoredIn(t, e.client, e.table)
	if len(st.Events) != 2 || st.Quarantined != 1 {
		t.Fatalf("stored %v, quarantined %d; want a-1, a-2 and one quarantined", st.Events, st.Quarantined)
	}
	q := e.itemsIn(t, "Q#")
	if o := item.OriginOf(q[0]); o.Tenant != "team-a" || o.RequestID == "" {
		t.Errorf("quarantined origin %+v, want tenant team-a", o)
	}
}

// TestTenantForeignSourceIs403AndWritesNothing: a request to team-a's
// route holding one event that is not team-a's, in any of the body's
// shapes, in binary mode, or invalid, is refused whole with DESIGN.md's
// 403, makes no DynamoDB request at all, and is logged with the caller
// and counted.
func TestTenantForeignSourceIs403AndWritesNothing(t *testing.T) {
	e := newTenantEnv(t)
	foreign := `{"error":"source: \"team-b/x\" is not a source of tenant team-a"}`
	for name, edit := range map[string]func(*events.APIGatewayV2HTTPRequest){
		"one event": func(r *events.APIGatewayV2HTTPRequest) { r.Body = event("b-1", "team-b/x") },
		"last of an array": func(r *events.APIGatewayV2HTTPRequest) {
			r.Body, r.Headers["content-type"] = "["+event("a-1", "team-a/x")+","+event("b-1", "team-b/x")+"]", "application/json"
		},
		"batch": func(r *events.APIGatewayV2HTTPRequest) {
			r.Body, r.Headers["content-type"] = "["+event("b-1", "team-b/x")+"]", "application/cloudevents-batch+json"
		},
		"binary ce-source": func(r *events.APIGatewayV2HTTPRequest) {
			r.Body = `{"order": 1}`
			r.Headers = map[string]string{"content-type": "application/json", "ce-specversion": "1.0", "ce-id": "b-1",
				"ce-source": "team-b/x", "ce-type": "t", "ce-time": "2026-11-22T11:50:00Z"}
		},
		"invalid event": func(r *events.APIGatewayV2HTTPRequest) {
			r.Body = `{"specversion": "1.0", "id": "b-1", "source": "team-b/x"}`
		},
		"prefix without its delimiter": func(r *events.APIGatewayV2HTTPRequest) { r.Body = event("b-1", "team-a") },
	} {
		t.Run(name, func(t *testing.T) {
			before, logged := e.requests(), strings.Count(e.log.String(), tenant.MetricRefused)
			req := tenantRequest(t, "", "")
			edit(&req)
			want := foreign
			if name == "prefix without its delimiter" {
				want = `{"error":"source: \"team-a\" is not a source of tenant team-a"}`
			}
			resp, _ := e.h.HTTP(context.Background(), req)
			if resp.StatusCode != 403 || resp.Body != want {
				t.Errorf("%d %s, want 403 %s", resp.StatusCode, resp.Body, want)
			}
			if n := e.requests() - before; n != 0 {
				t.Errorf("%d DynamoDB requests, want none", n)
			}
			if n := strings.Count(e.log.String(), tenant.MetricRefused) - logged; n < 1 {
				t.Errorf("the refusal was not counted in %s", tenant.MetricRefused)
			}
			if !strings.Contains(e.log.String(), `"caller_arn":"arn:aws:sts::000000000000:assumed-role/Shardline-TenantTeamXaWriter/producer"`) {
				t.Errorf("the log does not name the caller: %s", e.log.String())
			}
		})
	}
	if st := testddb.StoredIn(t, e.client, e.table); len(st.Events) != 0 || st.Quarantined != 0 {
		t.Errorf("stored %v and %d quarantined, want nothing", st.Events, st.Quarantined)
	}
}

// TestTenantNamedV1CannotReachAllSources: /v1/tenants/v1/events is tenant
// v1's route, by route key or, without one, by path: a source that is not
// v1's is refused there, where /v1/events would take it.
func TestTenantNamedV1CannotReachAllSources(t *testing.T) {
	e := newTenantEnv(t)
	for name, req := range map[string]events.APIGatewayV2HTTPRequest{
		"route key": tenantRequest(t, "/v1/tenants/v1/events", event("b-1", "team-b/x")),
		"path only": {Version: "2.0", RawPath: "/v1/tenants/v1/events", Body: event("b-1", "team-b/x")},
	} {
		req.RequestContext.HTTP.Method = "POST"
		before := e.requests()
		resp, _ := e.h.HTTP(context.Background(), req)
		if resp.StatusCode != 403 || !strings.Contains(resp.Body, "is not a source of tenant v1") {
			t.Errorf("%s: %d %s, want tenant v1's 403", name, resp.StatusCode, resp.Body)
		}
		if n := e.requests() - before; n != 0 {
			t.Errorf("%s: %d DynamoDB requests, want none", name, n)
		}
	}
	// Without tenants, the same request is no tenant's: a 404.
	plain := New(DefaultConfig(e.table), testddb.Client(t, e.via), Options{Now: func() time.Time { return fixtureNow }})
	before := e.requests()
	if resp, _ := plain.HTTP(context.Background(), tenantRequest(t, "/v1/tenants/v1/events", event("b-1", "team-b/x"))); resp.StatusCode != 404 {
		t.Errorf("without tenants: %d %s, want 404", resp.StatusCode, resp.Body)
	}
	if n := e.requests() - before; n != 0 {
		t.Errorf("without tenants: %d DynamoDB requests, want none", n)
	}
}

// TestTenantUnknownIs404: a tenant the deployment does not declare,
// whatever its spelling, is a 404 that reads and writes nothing.
func TestTenantUnknownIs404(t *testing.T) {
	e := newTenantEnv(t)
	for _, path := range []string{"/v1/tenants/team-c/events", "/v1/tenants/Team-A/events", "/v1/tenants/team-a%2F/events", "/v1/tenants/team-ab/events"} {
		before := e.requests()
		resp, _ := e.h.HTTP(context.Background(), tenantRequest(t, path, ""))
		if resp.StatusCode != 404 || !strings.Contains(resp.Body, "no tenant") {
			t.Errorf("%s: %d %s, want 404 no tenant", path, resp.StatusCode, resp.Body)
		}
		if n := e.requests() - before; n != 0 {
			t.Errorf("%s: %d DynamoDB requests", path, n)
		}
	}
}

// TestTenantCallerMustBeTheRoutesRole: another tenant's writer, or the
// tenant's own reader, on team-a's POST route is a 403 before the body is
// read.
func TestTenantCallerMustBeTheRoutesRole(t *testing.T) {
	e := newTenantEnv(t)
	for _, id := range []string{teamBWriter + ":s", teamAReader + ":s"} {
		req := tenantRequest(t, "", "")
		req.RequestContext.Authorizer.IAM.UserID = id
		resp, _ := e.h.HTTP(context.Background(), req)
		if resp.StatusCode != 403 || !strings.Contains(resp.Body, "is not tenant team-a's writer role") {
			t.Errorf("caller %s: %d %s, want 403", id, resp.StatusCode, resp.Body)
		}
	}
	if n := e.requests(); n != 0 {
		t.Errorf("%d DynamoDB requests, want none", n)
	}
}

// tenantRecord is a Kinesis record of stream holding payload.
func tenantRecord(stream string, seq int, payload string) events.KinesisEventRecord {
	rec := kinesisBatch([]byte(payload)).Records[0]
	rec.EventSourceArn = stream
	rec.Kinesis.SequenceNumber = fmt.Sprintf("4965650000000000000000000000000000000000%016d", seq)
	rec.EventID = "shardId-000000000001:" + rec.Kinesis.SequenceNumber
	return rec
}

// TestTenantStreamQuarantinesForeignRecords: on team-a's own stream, an
// event that is not team-a's is quarantined with a reason beginning
// "tenant:" and never stored (a replay refuses it again:
// replay.TestReingestChecksTenantsAgain); the same event on the shared
// stream is stored.
func TestTenantStreamQuarantinesForeignRecords(t *testing.T) {
	e := newTenantEnv(t)
	ev := events.KinesisEvent{Records: []events.KinesisEventRecord{
		tenantRecord(teamAStream, 1, event("a-1", "team-a/x")),
		tenantRecord(teamAStream, 2, event("b-1", "team-b/x")),
		tenantRecord(teamAStream, 3, "["+event("a-2", "urn:a:y")+","+event("v-1", "v1/z")+"]"),
	}}
	resp, err := e.h.Kinesis(invocation(t), ev)
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("%v %+v", err, resp)
	}
	st := testddb.StoredIn(t, e.client, e.table)
	for k := range st.Events {
		if !strings.Contains(k, "team-a/") && !strings.Contains(k, "urn:a:") {
			t.Errorf("stored %s from team-a's stream", k)
		}
	}
	if len(st.Events) != 2 || st.Quarantined != 2 {
		t.Fatalf("stored %v, %d quarantined; want a-1 and a-2, two quarantined", st.Events, st.Quarantined)
	}
	for _, it := range e.itemsIn(t, "Q#") {
		reason, origin := s(it, schema.Reason), item.OriginOf(it)
		if !strings.HasPrefix(reason, "tenant: ") || origin.Tenant != "team-a" || origin.StreamARN != teamAStream {
			t.Errorf("quarantined %q with origin %+v", reason, origin)
		}
	}
	if !strings.Contains(e.log.String(), `"`+tenant.MetricRefused+`":2`) {
		t.Errorf("the batch's refusals were not counted: %s", e.log.String())
	}
	// The shared stream keeps every source.
	if resp, _ := e.h.Kinesis(invocation(t), kinesisBatch([]byte(event("b-2", "team-b/x")))); len(resp.BatchItemFailures) != 0 {
		t.Fatal(resp)
	}
	if st := testddb.StoredIn(t, e.client, e.table); st.Events[testddb.EventKey("team-b/x", "b-2", time.Date(2026, 11, 22, 11, 50, 0, 0, time.UTC))] != 1 {
		t.Errorf("the shared stream's event was not stored: %v", st.Events)
	}
}
