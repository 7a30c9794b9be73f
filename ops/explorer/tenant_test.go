package explorer

import (
	"net/http/httptest"
	"testing"
)

// TestProxyTenant: with a tenant, the page's reads go to the tenant's
// routes, under the target's path.
func TestProxyTenant(t *testing.T) {
	p, got := proxyFor(t)
	p.Tenant = "team-a"
	for path, want := range map[string]string{
		"/v1/events?source=team-a%2Fx": "/stage/v1/tenants/team-a/events",
		"/v1/sources":                  "/stage/v1/tenants/team-a/sources",
		"/v1/counts?source=team-a%2Fx": "/stage/v1/tenants/team-a/counts",
	} {
		p.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "http://127.0.0.1:8080"+path, nil))
		if got.req == nil || got.req.URL.Path != want {
			t.Errorf("%s: forwarded to %v, want %s", path, got.req.URL, want)
		}
	}
}
