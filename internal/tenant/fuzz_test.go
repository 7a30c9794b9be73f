package tenant

import (
	"reflect"
	"strings"
	"testing"
)

// FuzzParse: Parse never panics; what it accepts has valid names, owns
// each of its prefixes by the tenant that lists it (so no two tenants'
// overlap), and reads back from its canonical JSON as the same tenants.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		`{"team-a": {"sources": ["team-a/", "urn:a:"], "stream": true}, "team-b": {"sources": ["team-b/"]}}`,
		`{"team-a": {"sources": ["a/"]}, "team-ab": {"sources": ["a/b"]}}`,
		`{"v1": {"sources": ["v1/", "v1/x"]}}`,
		`{"uni": {"sources": ["日本/", "é"]}, "x": {"sources": ["e"]}}`,
		`{}`, `null`, `{"a": {"sources": [""]}}`, `{"A": {"sources": ["a"]}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse(data)
		if err != nil {
			if c != nil {
				t.Fatalf("an error and a Config: %v", err)
			}
			return
		}
		for _, name := range c.Names() {
			if ValidName(name) != nil {
				t.Fatalf("accepted the name %q", name)
			}
			tn, _ := c.Tenant(name)
			for _, p := range tn.Sources {
				if owner, ok := c.Owner(p); !ok || owner != name {
					t.Fatalf("prefix %q of %s is owned by %q (%v)", p, name, owner, ok)
				}
				if owner, _ := c.Owner(p + "\x00tail"); owner != name {
					t.Fatalf("a source under %s's prefix %q is owned by %q", name, p, owner)
				}
			}
		}
		back, err := Parse([]byte(c.String()))
		if err != nil {
			t.Fatalf("the canonical JSON %s does not parse: %v", c.String(), err)
		}
		if !reflect.DeepEqual(back.Map(), c.Map()) || back.String() != c.String() {
			t.Fatalf("round trip changed %s into %s", c.String(), back.String())
		}
		for _, p := range []string{"", "a", "team-a/", strings.Repeat("z", 300)} {
			owner, ok := c.Owner(p)
			if ok != c.Owns(owner, p) {
				t.Fatalf("Owner and Owns disagree on %q", p)
			}
		}
	})
}
