package apigw

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/aws/aws-lambda-go/events"
)

// TestRouteByKey: with a route key, the key decides, never the path's
// suffix; a tenant named v1 is a tenant, never /v1/events; and a path
// the key could not have routed is no route.
func TestRouteByKey(t *testing.T) {
	for _, c := range []struct {
		key, path      string
		tenanted       bool
		tenant, leaf   string
		isEvents       bool
		isEventsMethod string
	}{
		{"POST /v1/events", "/v1/events", false, "", "/v1/events", true, "POST"},
		{"POST /v1/tenants/team-a/events", "/v1/tenants/team-a/events", true, "team-a", "/v1/events", true, "POST"},
		{"POST /v1/tenants/v1/events", "/v1/tenants/v1/events", true, "v1", "/v1/events", true, "POST"},
		// A path that disagrees with the key is no route: API Gateway
		// did not route it.
		{"POST /v1/tenants/team-a/events", "/v1/events", true, "team-a", "", false, "POST"},
		{"POST /v1/events", "/v1/tenants/v1/events", false, "", "", false, "POST"},
		{"POST /v1/events", "/v2/other", false, "", "", false, "POST"},
		// A named stage's path ends with the key's.
		{"POST /v1/events", "/prod/v1/events", false, "", "/v1/events", true, "POST"},
		{"GET /v1/tenants/team-a/sources", "/v1/tenants/team-a/sources", true, "team-a", "/v1/sources", false, "GET"},
		{"GET /v1/tenants/team-a", "/v1/tenants/team-a", true, "", "", false, "GET"},
		{"GET /v1/tenants/team-a/x/events", "/v1/tenants/team-a/x/events", true, "", "", false, "GET"},
		// A stage prefix is no route once a key says the route.
		{"POST /prod/v1/events", "/prod/v1/events", false, "", "/prod/v1/events", false, "POST"},
	} {
		req := events.APIGatewayV2HTTPRequest{Version: "2.0", RouteKey: c.key, RawPath: c.path}
		req.RequestContext.HTTP.Method = "POST"
		rt := FromHTTP(req).Route()
		if rt.Tenanted != c.tenanted || rt.Tenant != c.tenant || rt.Leaf != c.leaf || rt.Is("/v1/events") != c.isEvents || rt.Method != c.isEventsMethod {
			t.Errorf("%q: %+v, want tenanted %v tenant %q leaf %q events %v method %s", c.key, rt, c.tenanted, c.tenant, c.leaf, c.isEvents, c.isEventsMethod)
		}
	}
}

// TestRouteWithoutKey: a request without a route key is routed by its
// path: a stage prefix still reaches /v1/events, and a path holding
// /v1/tenants/ is a tenant's route (Tenanted, its leaf the events) or
// none, never the all-sources one.
func TestRouteWithoutKey(t *testing.T) {
	for _, c := range []struct {
		path     string
		tenanted bool
		tenant   string
		isEvents bool
	}{
		{"/v1/events", false, "", true},
		{"/prod/v1/events/", false, "", true},
		{"/v1/tenants/v1/events", true, "v1", true}, // tenant v1's events, Tenanted
		{"/prod/v1/tenants/team-a/events", true, "team-a", true},
		{"/v1/tenants/team-a/v1/events", true, "", false},
		{"/v1/tenants//v1/events", true, "", false},
	} {
		rt := Request{Method: "POST", Path: c.path}.Route()
		if rt.Tenanted != c.tenanted || rt.Tenant != c.tenant || rt.Is("/v1/events") != c.isEvents {
			t.Errorf("%q: %+v, want tenanted %v tenant %q, /v1/events %v", c.path, rt, c.tenanted, c.tenant, c.isEvents)
		}
	}
}

// TestRouteOfFixtures: the samples in events/ carry route keys, and the
// v1 REST sample its resource.
func TestRouteOfFixtures(t *testing.T) {
	b, err := os.ReadFile("../../events/api-ingest-v2.json")
	if err != nil {
		t.Fatal(err)
	}
	var v2 events.APIGatewayV2HTTPRequest
	if err := json.Unmarshal(b, &v2); err != nil {
		t.Fatal(err)
	}
	if r := FromHTTP(v2); r.RouteKey != "POST /v1/events" || !r.Route().Is("/v1/events") || r.Route().Tenanted {
		t.Errorf("api-ingest-v2.json: route key %q, route %+v", r.RouteKey, r.Route())
	}
	if b, err = os.ReadFile("../../events/rest-ingest-v1.json"); err != nil {
		t.Fatal(err)
	}
	var v1 events.APIGatewayProxyRequest
	if err := json.Unmarshal(b, &v1); err != nil {
		t.Fatal(err)
	}
	if r := FromREST(v1); r.RouteKey != "POST /v1/events" || !r.Route().Is("/v1/events") {
		t.Errorf("rest-ingest-v1.json: route key %q, route %+v", r.RouteKey, r.Route())
	}
	// A REST resource with a {tenant} parameter names the tenant from it.
	v1.Resource, v1.Path, v1.PathParameters = "/v1/tenants/{tenant}/events", "/v1/tenants/team-a/events", map[string]string{"tenant": "team-a"}
	if rt := FromREST(v1).Route(); !rt.Tenanted || rt.Tenant != "team-a" || rt.Leaf != "/v1/events" {
		t.Errorf("REST {tenant}: %+v", rt)
	}
}

// TestCallerFromIAM: the caller is read from the IAM authorizer (v2) and
// the identity (v1).
func TestCallerFromIAM(t *testing.T) {
	var v2 events.APIGatewayV2HTTPRequest
	v2.RequestContext.Authorizer = &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
		IAM: &events.APIGatewayV2HTTPRequestContextAuthorizerIAMDescription{UserARN: "arn:aws:sts::1:assumed-role/w/s", UserID: "AROAX:s"}}
	if c := FromHTTP(v2).Caller; c.ARN != "arn:aws:sts::1:assumed-role/w/s" || c.UserID != "AROAX:s" {
		t.Errorf("v2 caller %+v", c)
	}
	var v1 events.APIGatewayProxyRequest
	v1.RequestContext.Identity.UserArn, v1.RequestContext.Identity.User = "arn:aws:sts::1:assumed-role/r/s", "AROAY:s"
	if c := FromREST(v1).Caller; c.ARN != "arn:aws:sts::1:assumed-role/r/s" || c.UserID != "AROAY:s" {
		t.Errorf("v1 caller %+v", c)
	}
}
