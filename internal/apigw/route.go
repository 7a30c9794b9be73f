package apigw

import "strings"

// TenantsPath begins the path of every tenant's route:
// /v1/tenants/<name>/events, /counts, /sources, /quarantine.
const TenantsPath = "/v1/tenants/"

// Route is the route a request was sent to, which the functions dispatch
// on: API Gateway's route key when the request has one, never the path's
// suffix, so that /v1/tenants/v1/events is tenant v1's route and not
// /v1/events.
type Route struct {
	Method string
	// Path is the route key's path or, for a request without one, the
	// request's path without a trailing slash.
	Path string
	// Leaf is what the route serves, named by the all-sources route's
	// path: "/v1/events" for both /v1/events and
	// /v1/tenants/team-a/events. Empty when the path is neither shape.
	Leaf string
	// Tenanted says that the path is a tenant's route, of the tenant
	// Tenant (which may be no tenant the function knows).
	Tenanted bool
	Tenant   string
	// suffix: the request has no route key, and a stage prefix may come
	// before the route's path (/prod/v1/events), as before routes had
	// keys.
	suffix bool
}

// Route reads the route r was sent to. With a route key, the key's path
// is the route, exactly: a REST API resource's {tenant} parameter is read
// from the path parameters. A request whose path disagrees with its key
// (one API Gateway did not route: the path does not end with the key's
// path, or holds /v1/tenants/ on a route without a tenant) is no route.
// Without a key (a hand-made invocation), the path is the route: a path
// holding /v1/tenants/ is a tenant's route or none, and any other is
// matched by its end, as it was before.
func (r Request) Route() Route {
	if m, p, ok := strings.Cut(r.RouteKey, " "); ok {
		rt := Route{Method: m, Path: p}
		if rest, ok := strings.CutPrefix(p, TenantsPath); ok {
			rt.tenant(rest)
			if rt.Tenant == "{tenant}" {
				rt.Tenant = r.PathParams["tenant"]
			}
		} else {
			rt.Leaf = p
		}
		if !r.agrees(rt) {
			rt.Leaf = ""
		}
		return rt
	}
	path := strings.TrimRight(r.Path, "/")
	rt := Route{Method: r.Method, Path: path}
	if i := strings.Index(path, TenantsPath); i >= 0 {
		rt.tenant(path[i+len(TenantsPath):])
		return rt
	}
	rt.Leaf, rt.suffix = path, true
	return rt
}

// agrees says whether r's path could have been routed to rt, by its key.
func (r Request) agrees(rt Route) bool {
	path := strings.TrimRight(r.Path, "/")
	if path == "" || strings.Contains(rt.Path, "{") {
		return true // nothing to compare, or a template
	}
	return strings.HasSuffix(path, rt.Path) && (rt.Tenanted || !strings.Contains(path, TenantsPath))
}

// tenant reads "<name>/<leaf>", the path after TenantsPath. Anything else
// (no leaf, a leaf of several segments) is no route: Leaf stays empty.
func (rt *Route) tenant(rest string) {
	rt.Tenanted = true
	name, leaf, ok := strings.Cut(rest, "/")
	if !ok || leaf == "" || strings.Contains(leaf, "/") {
		return
	}
	rt.Tenant, rt.Leaf = name, "/v1/"+leaf
}

// Is says whether the route serves leaf, an all-sources route's path
// such as "/v1/events".
func (rt Route) Is(leaf string) bool {
	if rt.suffix {
		return strings.HasSuffix(rt.Leaf, leaf)
	}
	return rt.Leaf == leaf
}
