package devserver

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/shardline/shardline/internal/apigw"
	"github.com/shardline/shardline/internal/ingest"
	"github.com/shardline/shardline/internal/query"
	"github.com/shardline/shardline/internal/tenant"
)

// TenantRoutes are the route keys of every tenant of c, as the stack
// makes them (one route per tenant and path, the name spelled out): post
// for the ingest function, get for the query function.
func TenantRoutes(c *tenant.Config) (post, get []string) {
	for _, name := range c.Names() {
		base := apigw.TenantsPath + name
		post = append(post, "POST "+base+strings.TrimPrefix(ingest.Route, "/v1"))
		for _, r := range []string{query.EventsRoute, query.CountsRoute, query.SourcesRoute, query.QuarantineRoute} {
			get = append(get, "GET "+base+strings.TrimPrefix(r, "/v1"))
		}
	}
	return post, get
}

// ReadTenants reads the -tenants flag's value: the JSON of
// shardline:tenants, or @file for a file holding it; "" is none. It
// returns the canonical JSON the functions read from TENANTS.
func ReadTenants(v string) (string, error) {
	if v == "" {
		return "", nil
	}
	data := []byte(v)
	if path, ok := strings.CutPrefix(v, "@"); ok {
		f, err := os.Open(path)
		if err != nil {
			return "", fmt.Errorf("-tenants: %w", err)
		}
		defer f.Close()
		if data, err = io.ReadAll(io.LimitReader(f, 1<<20)); err != nil {
			return "", fmt.Errorf("-tenants: read %s: %w", path, err)
		}
	}
	c, err := tenant.Parse(data)
	if err != nil {
		return "", fmt.Errorf("-tenants: %w", err)
	}
	return c.String(), nil
}
