package tenant

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
)

func mustParse(t *testing.T, s string) *Config {
	t.Helper()
	c, err := Parse([]byte(s))
	if err != nil {
		t.Fatalf("Parse(%s): %v", s, err)
	}
	return c
}

// TestNames: the contract's names, and the hostile ones around them.
func TestNames(t *testing.T) {
	for _, c := range []struct {
		name string
		ok   bool
	}{
		{"team-a", true}, {"team-ab", true}, {"v1", true}, {"a", true}, {"0", true}, {"a-b-c", true},
		{strings.Repeat("a", 63), true},
		{"", false}, {strings.Repeat("a", 64), false},
		{"Team-a", false}, {"TEAM-A", false},
		{"team%2Da", false}, {"team%2da", false}, {"-team", false}, {"team-", false}, {"-", false},
		{"team_a", false}, {"team.a", false}, {"team/a", false}, {"team a", false},
		{"tëam", false}, {"team\x00", false}, {"ﬁ", false},
	} {
		err := ValidName(c.name)
		if (err == nil) != c.ok {
			t.Errorf("ValidName(%q) = %v, want ok %v", c.name, err, c.ok)
		}
		_, perr := New(map[string]Tenant{c.name: {Sources: []string{"x/"}}})
		if (perr == nil) != c.ok {
			t.Errorf("New with tenant %q: %v, want ok %v", c.name, perr, c.ok)
		}
		if !c.ok && (perr == nil || !strings.Contains(perr.Error(), "a-z, 0-9 and -")) {
			t.Errorf("tenant %q: the error %v does not say what a name may hold", c.name, perr)
		}
	}
}

// TestParseRefuses: what Parse refuses, and that each error says what is
// wrong.
func TestParseRefuses(t *testing.T) {
	long := strings.Repeat("p", MaxPrefixLen+1)
	for _, c := range []struct{ json, want string }{
		{``, "want a JSON object"},
		{`null`, "not null"},
		{`[]`, "want a JSON object"},
		{`{"team-a": {"sources": ["a/"], "streams": true}}`, `unknown field "streams"`},
		{`{"team-a": {"sources": ["a/"], "Stream": true}}`, `unknown field "Stream"`},
		{`{"team-a": {"sources": ["a/"]}} {}`, "data after the JSON value"},
		{`{"team-a": {"sources": ["a/"]}, "team-a": {"sources": ["b/"]}}`, `tenant "team-a" is named twice`},
		{`{"team-a": {"sources": "a/"}}`, `tenant "team-a"`},
		{`{"team-a": {"sources": ["a/"], "sources": ["b/"]}}`, `field "sources" is named twice`},
		{`{"team-a": null}`, `tenant "team-a"`},
		{`{"team-a": {"sources": ["a/"], "stream": "yes"}}`, `tenant "team-a"`},
		{`{"team-a": {}}`, "sources is empty"},
		{`{"team-a": {"sources": []}}`, "sources is empty"},
		{`{"team-a": {"sources": null}}`, "sources is empty"},
		{`{"team-a": {"sources": [""]}}`, "empty source prefix"},
		{`{"team-a": {"sources": ["a/", ""]}}`, "empty source prefix"},
		{`{"team-a": {"sources": ["` + long + `"]}}`, "257 bytes"},
		{`{"team-a": {"sources": ["\udc00x"]}}`, "U+FFFD"},
		{"{\"team-a\": {\"sources\": [\"\xff\"]}}", "not valid UTF-8"},
		{`{"Team-A": {"sources": ["a/"]}}`, `"Team-A"`},
		{`{"team-a": {"sources": ["a/"]}, "team-b": {"sources": ["a/"]}}`, `tenant team-b's source prefix "a/" is tenant team-a's source prefix "a/"`},
		{`{"team-a": {"sources": ["team-a"]}, "team-ab": {"sources": ["team-ab/"]}}`,
			`tenant team-ab's source prefix "team-ab/" begins tenant team-a's source prefix "team-a"`},
	} {
		_, err := Parse([]byte(c.json))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Parse(%s) = %v, want an error saying %q", c.json, err, c.want)
		}
	}
}

// TestOverlapNamesBoth: an overlap between two tenants names both
// tenants and both prefixes, whichever way round, however far apart
// they sort; every overlapping pair is reported.
func TestOverlapNamesBoth(t *testing.T) {
	for _, c := range []struct {
		tenants map[string]Tenant
		pairs   [][4]string // tenant, prefix, tenant, prefix
	}{
		{map[string]Tenant{"a": {Sources: []string{"x/"}}, "b": {Sources: []string{"x/y/"}}}, [][4]string{{"a", "x/", "b", "x/y/"}}},
		{map[string]Tenant{"b": {Sources: []string{"x/"}}, "a": {Sources: []string{"x/y/"}}}, [][4]string{{"b", "x/", "a", "x/y/"}}},
		// Far apart: "x/" and "x/z" with many of a's own between them.
		{map[string]Tenant{"a": {Sources: []string{"x/", "x/a", "x/b", "x/c"}}, "b": {Sources: []string{"x/z"}}}, [][4]string{{"a", "x/", "b", "x/z"}}},
		// Equal prefixes.
		{map[string]Tenant{"a": {Sources: []string{"same"}}, "b": {Sources: []string{"same"}}}, [][4]string{{"a", "same", "b", "same"}}},
		// Three deep: all three pairs.
		{map[string]Tenant{"a": {Sources: []string{"p"}}, "b": {Sources: []string{"pq"}}, "c": {Sources: []string{"pqr"}}},
			[][4]string{{"a", "p", "b", "pq"}, {"a", "p", "c", "pqr"}, {"b", "pq", "c", "pqr"}}},
		// Unicode, bytewise: "é" is C3 A9; "\xc3" alone is not valid UTF-8,
		// so the overlap is between whole characters' bytes.
		{map[string]Tenant{"a": {Sources: []string{"é"}}, "b": {Sources: []string{"éa"}}}, [][4]string{{"a", "é", "b", "éa"}}},
	} {
		_, err := New(c.tenants)
		if err == nil {
			t.Errorf("%v: accepted", c.tenants)
			continue
		}
		for _, p := range c.pairs {
			if !strings.Contains(err.Error(), fmt.Sprintf("tenant %s's source prefix %q", p[2], p[3])) ||
				!strings.Contains(err.Error(), fmt.Sprintf("tenant %s's source prefix %q", p[0], p[1])) {
				t.Errorf("%v: the error does not name %v: %v", c.tenants, p, err)
			}
		}
		if n := strings.Count(err.Error(), "so a source could belong to both"); n != len(c.pairs) {
			t.Errorf("%v: %d overlaps reported, want %d: %v", c.tenants, n, len(c.pairs), err)
		}
	}
}

// TestNoOverlapHere: prefixes that look alike but do not begin one
// another are fine, and a tenant's own overlapping prefixes are
// harmless.
func TestNoOverlapHere(t *testing.T) {
	for _, m := range []map[string]Tenant{
		{"team-a": {Sources: []string{"team-a/"}}, "team-ab": {Sources: []string{"team-ab/"}}},
		{"a": {Sources: []string{"x/a"}}, "b": {Sources: []string{"x/b"}}},
		{"a": {Sources: []string{"Team"}}, "b": {Sources: []string{"team"}}},
		{"a": {Sources: []string{"é"}}, "b": {Sources: []string{"e"}}},
		{"a": {Sources: []string{"x/", "x/y/", "x/y/z", "x/"}}, "b": {Sources: []string{"y/"}}},
	} {
		if _, err := New(m); err != nil {
			t.Errorf("%v: %v", m, err)
		}
	}
}

// TestOwner: who owns what, bytewise, with the hostile neighbours.
func TestOwner(t *testing.T) {
	c := mustParse(t, `{
		"team-a":  {"sources": ["team-a/", "urn:a:", "x/", "x/deep/"], "stream": true},
		"team-ab": {"sources": ["team-ab/"]},
		"v1":      {"sources": ["v1/"]},
		"uni":     {"sources": ["données/", "日本/"]},
		"pct":     {"sources": ["team%2Da/"]}
	}`)
	for _, tc := range []struct {
		source, owner string
	}{
		{"team-a/", "team-a"}, {"team-a/svc", "team-a"}, {"urn:a:1", "team-a"}, {"x/deep/1", "team-a"}, {"x/", "team-a"},
		{"team-ab/svc", "team-ab"}, {"team-ab", ""}, {"team-a", ""}, {"team-", ""},
		{"Team-a/svc", ""}, {"TEAM-A/svc", ""}, {"team%2Da/x", "pct"}, {"team%2da/x", ""},
		{"v1/x", "v1"}, {"v1", ""}, {"/v1/x", ""},
		{"données/x", "uni"}, {"donne\u0301es/x", ""}, {"日本/x", "uni"}, {"日本", ""},
		{"", ""}, {"\xff", ""}, {"zzz", ""}, {"urn:a", ""}, {"urn:b:1", ""},
	} {
		got, ok := c.Owner(tc.source)
		if got != tc.owner || ok != (tc.owner != "") {
			t.Errorf("Owner(%q) = %q, %v; want %q", tc.source, got, ok, tc.owner)
		}
		for _, name := range c.Names() {
			if want := name == tc.owner; c.Owns(name, tc.source) != want {
				t.Errorf("Owns(%s, %q) = %v, want %v", name, tc.source, !want, want)
			}
		}
		if c.Owns("nobody", tc.source) {
			t.Errorf("an unknown tenant owns %q", tc.source)
		}
	}
	var none *Config
	if _, ok := none.Owner("team-a/x"); ok || none.Owns("team-a", "team-a/x") || none.Len() != 0 {
		t.Error("the nil Config owns something")
	}
}

// TestCanonical: String sorts tenants and prefixes, drops repeats and a
// false stream, and Parse reads it back to the same tenants.
func TestCanonical(t *testing.T) {
	c := mustParse(t, `{"b": {"sources": ["z/", "a/", "z/"], "stream": false}, "a": {"sources": ["q/"], "stream": true}}`)
	want := `{"a":{"sources":["q/"],"stream":true},"b":{"sources":["a/","z/"]}}`
	if got := c.String(); got != want {
		t.Errorf("String() = %s, want %s", got, want)
	}
	back := mustParse(t, c.String())
	if !reflect.DeepEqual(back.Map(), c.Map()) || back.String() != want {
		t.Errorf("round trip: %v, want %v", back.Map(), c.Map())
	}
	if got := mustParse(t, `{}`).String(); got != `{}` {
		t.Errorf("no tenants: %s", got)
	}
	// Map and Tenant hand out copies.
	m := c.Map()
	m["a"].Sources[0] = "mutated"
	if tn, _ := c.Tenant("a"); tn.Sources[0] != "q/" {
		t.Error("Map shares its prefixes with the Config")
	}
}

func TestFromEnv(t *testing.T) {
	env := func(kv ...string) func(string) string {
		m := map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(k string) string { return m[k] }
	}
	c, err := FromEnv(env())
	if err != nil || c.Len() != 0 {
		t.Fatalf("unset: %v, %d tenants", err, c.Len())
	}
	arn := "arn:aws:kinesis:us-east-1:123456789012:stream/S-TenantteamXaStream-abc"
	c, err = FromEnv(env(
		EnvTenants, `{"team-a":{"sources":["team-a/"],"stream":true},"team-b":{"sources":["team-b/"]}}`,
		EnvStreams, `{"team-a":"`+arn+`"}`,
		EnvRoles, `{"team-a":{"writer":"AROAWRITERA","reader":"AROAREADERA"},"team-b":{"writer":"AROAWRITERB"}}`,
	))
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := c.StreamOwner(arn); o != "team-a" || !ok {
		t.Errorf("StreamOwner = %q, %v", o, ok)
	}
	if _, ok := c.StreamOwner(arn + "x"); ok {
		t.Error("a longer ARN has an owner")
	}
	if r := c.Roles("team-a"); r != (Roles{Writer: "AROAWRITERA", Reader: "AROAREADERA"}) {
		t.Errorf("roles %v", r)
	}
	if r := c.Roles("team-c"); r != (Roles{}) {
		t.Errorf("an unknown tenant's roles %v", r)
	}
	for _, bad := range []struct {
		env  func(string) string
		want string
	}{
		{env(EnvTenants, `{"Team": {"sources": ["a/"]}}`), "TENANTS: tenants: tenant name"},
		{env(EnvTenants, `{"team-b":{"sources":["b/"]}}`, EnvStreams, `{"team-b":"`+arn+`"}`), `given to "team-b", which is not a tenant with "stream": true`},
		{env(EnvTenants, `{"team-a":{"sources":["a/"],"stream":true}}`, EnvStreams, `{"team-a":"stream/x"}`), "is not a stream ARN"},
		{env(EnvTenants, `{"team-a":{"sources":["a/"],"stream":true},"team-b":{"sources":["b/"],"stream":true}}`, EnvStreams, `{"team-a":"`+arn+`","team-b":"`+arn+`"}`),
			"is given to both team-a and team-b"},
		{env(EnvStreams, `{"team-a":"`+arn+`"}`), `given to "team-a"`},
		{env(EnvTenants, `{"team-a":{"sources":["a/"]}}`, EnvRoles, `{"team-z":{"writer":"AROA"}}`), `roles are given to "team-z"`},
		{env(EnvTenants, `{"team-a":{"sources":["a/"]}}`, EnvRoles, `{"team-a":{"admin":"AROA"}}`), `TENANT_ROLES: want a JSON object`},
		{env(EnvTenants, `{"team-a":{"sources":["a/"]}}`, EnvStreams, `[]`), `TENANT_STREAMS: want a JSON object`},
	} {
		if _, err := FromEnv(bad.env); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%v, want an error saying %q", err, bad.want)
		}
	}
}

// TestEnvSize: EnvSize is the length of the variables as the stack
// writes them, when the tokens resolve to values of the given lengths.
func TestEnvSize(t *testing.T) {
	c := mustParse(t, `{"team-a":{"sources":["team-a/"],"stream":true},"team-b":{"sources":["team-b/"]}}`)
	arn := strings.Repeat("a", 70)
	streams := `{"team-a":"` + arn + `"}`
	roles := `{"team-a":{"writer":"AROA567890123456789X","reader":"AROA567890123456789Y"},"team-b":{"writer":"AROA567890123456789Z","reader":"AROA567890123456789W"}}`
	want := len(EnvTenants) + len(c.String()) + len(EnvStreams) + len(streams) + len(EnvRoles) + len(roles)
	if got := c.EnvSize(70, 20); got != want {
		t.Errorf("EnvSize = %d, want %d", got, want)
	}
	if got := mustParse(t, `{}`).EnvSize(70, 20); got != 0 {
		t.Errorf("no tenants: %d bytes", got)
	}
	noStream := mustParse(t, `{"team-b":{"sources":["team-b/"]}}`)
	if got, want := noStream.EnvSize(70, 20), len(EnvTenants)+len(noStream.String())+len(EnvRoles)+len(`{"team-b":{"writer":"AROA567890123456789Z","reader":"AROA567890123456789W"}}`); got != want {
		t.Errorf("without streams: EnvSize = %d, want %d (no %s)", got, want, EnvStreams)
	}
}
