package devserver

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shardline/shardline/internal/tenant"
)

// TestTenantRoutesAreTheStacks: each tenant gets the stack's five routes,
// its name spelled out.
func TestTenantRoutesAreTheStacks(t *testing.T) {
	c, err := tenant.Parse([]byte(`{"team-b": {"sources": ["team-b/"]}, "team-a": {"sources": ["team-a/"]}}`))
	if err != nil {
		t.Fatal(err)
	}
	post, get := TenantRoutes(c)
	if strings.Join(post, ",") != "POST /v1/tenants/team-a/events,POST /v1/tenants/team-b/events" {
		t.Errorf("post %q", post)
	}
	want := "GET /v1/tenants/team-a/events,GET /v1/tenants/team-a/counts,GET /v1/tenants/team-a/sources,GET /v1/tenants/team-a/quarantine," +
		"GET /v1/tenants/team-b/events,GET /v1/tenants/team-b/counts,GET /v1/tenants/team-b/sources,GET /v1/tenants/team-b/quarantine"
	if strings.Join(get, ",") != want {
		t.Errorf("get %q", get)
	}
	if post, get := TenantRoutes(nil); post != nil || get != nil {
		t.Errorf("no tenants: %q %q", post, get)
	}
}

// TestReadTenants: JSON or @file, canonical; a bad value names the flag.
func TestReadTenants(t *testing.T) {
	p := filepath.Join(t.TempDir(), "tenants.json")
	if err := os.WriteFile(p, []byte(`{"team-a": {"sources": ["team-a/", "team-a/"]}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{`{"team-a": {"sources": ["team-a/"]}}`, "@" + p} {
		if got, err := ReadTenants(v); err != nil || got != `{"team-a":{"sources":["team-a/"]}}` {
			t.Errorf("%s: %q %v", v, got, err)
		}
	}
	for _, v := range []string{`{"a": {"sources": ["x/"]}, "b": {"sources": ["x/y"]}}`, "@/nonexistent", "{"} {
		if _, err := ReadTenants(v); err == nil || !strings.HasPrefix(err.Error(), "-tenants: ") {
			t.Errorf("%s: %v", v, err)
		}
	}
	if got, err := ReadTenants(""); got != "" || err != nil {
		t.Errorf("none: %q %v", got, err)
	}
}
