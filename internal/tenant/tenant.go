// Package tenant is the tenant configuration the stack and the functions
// share: which team owns which sources, by bytewise prefix, and whether it
// has its own stream (docs/configuration.md, "Tenants"; DESIGN.md's
// contract).
package tenant

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/shardline/shardline/internal/cloudevent"
)

// MaxNameLen is the longest tenant name: a DNS label's 63 characters.
const MaxNameLen = 63

// MaxPrefixLen is the longest source prefix: a longer one could match no
// source, which the functions refuse past cloudevent.MaxAttrBytes.
const MaxPrefixLen = cloudevent.MaxAttrBytes

// Tenant is one team's share of the pipeline: the sources it owns (every
// source that begins, bytewise, with one of Sources) and whether it has a
// Kinesis stream of its own.
type Tenant struct {
	Sources []string `json:"sources"`
	Stream  bool     `json:"stream,omitempty"`
}

// Config is a validated set of tenants: no two tenants' prefixes overlap,
// so a source has at most one owner. The zero Config has no tenants.
type Config struct {
	tenants map[string]Tenant
	// index is every tenant's prefixes, sorted bytewise and prefix-free
	// (a tenant's prefix that another of its own begins with is dropped),
	// so that the one prefix a source can begin with is the greatest one
	// not after it.
	index []owned
	// streams (tenant by stream ARN) and roles are the deployment's,
	// read by FromEnv.
	streams map[string]string
	roles   map[string]Roles
}

type owned struct{ prefix, tenant string }

// Parse reads the JSON object {"team-a": {"sources": ["team-a/"],
// "stream": true}, ...} strictly (an unknown field, a duplicate tenant or
// trailing data is an error) and validates it as New does.
func Parse(data []byte) (*Config, error) {
	if !utf8.Valid(data) {
		return nil, errors.New("tenants: the JSON is not valid UTF-8")
	}
	var raw map[string]json.RawMessage
	if err := strictDecode(data, &raw); err != nil {
		return nil, fmt.Errorf("tenants: want a JSON object of tenant names to {\"sources\": [prefixes], \"stream\": true or false}: %w", err)
	}
	if raw == nil {
		return nil, errors.New(`tenants: want a JSON object such as {"team-a": {"sources": ["team-a/"]}}, not null`)
	}
	if err := noDuplicateKeys(data, "tenant"); err != nil {
		return nil, fmt.Errorf("tenants: %w", err)
	}
	tenants := make(map[string]Tenant, len(raw))
	for name, body := range raw {
		t, err := decodeTenant(body)
		if err != nil {
			return nil, fmt.Errorf("tenants: tenant %q: want {\"sources\": [prefixes], \"stream\": true or false}: %w", name, err)
		}
		tenants[name] = t
	}
	return New(tenants)
}

// decodeTenant decodes one tenant. encoding/json matches field names
// without regard to case, so the names are checked here: "Stream" is an
// unknown field, not "stream".
func decodeTenant(body []byte) (Tenant, error) {
	var fields map[string]json.RawMessage
	if err := strictDecode(body, &fields); err != nil {
		return Tenant{}, err
	}
	if fields == nil {
		return Tenant{}, errors.New("null")
	}
	if err := noDuplicateKeys(body, "field"); err != nil {
		return Tenant{}, err
	}
	for _, k := range sortedKeys(fields) {
		if k != "sources" && k != "stream" {
			return Tenant{}, fmt.Errorf("unknown field %q", cut(k))
		}
	}
	var t Tenant
	if err := strictDecode(body, &t); err != nil {
		return Tenant{}, err
	}
	return t, nil
}

// strictDecode decodes one JSON value into v, refusing unknown fields and
// anything after the value.
func strictDecode(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("data after the JSON value")
	}
	if _, err := dec.Token(); err == nil {
		return errors.New("data after the JSON value")
	}
	return nil
}

// noDuplicateKeys refuses an object that has a key (what names) twice:
// the decoder would keep the last, silently.
func noDuplicateKeys(data []byte, what string) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	if _, err := dec.Token(); err != nil { // {
		return err
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		name, _ := tok.(string)
		if seen[name] {
			return fmt.Errorf("%s %q is named twice", what, cut(name))
		}
		seen[name] = true
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return err
		}
	}
	return nil
}

// New validates tenants: each name (ValidName), each tenant's prefixes
// (at least one, none empty, none longer than MaxPrefixLen, none holding
// U+FFFD) and that no two tenants' prefixes overlap. One of a tenant's
// own prefixes may begin with another of its own: it is redundant, and
// harmless, since both name the same owner. Exact repeats are dropped.
func New(tenants map[string]Tenant) (*Config, error) {
	c := &Config{tenants: make(map[string]Tenant, len(tenants))}
	var errs []error
	for _, name := range sortedKeys(tenants) {
		t := tenants[name]
		if err := ValidName(name); err != nil {
			errs = append(errs, err)
			continue
		}
		if err := checkPrefixes(name, t.Sources); err != nil {
			errs = append(errs, err)
			continue
		}
		srcs := slices.Clone(t.Sources)
		slices.Sort(srcs)
		c.tenants[name] = Tenant{Sources: slices.Compact(srcs), Stream: t.Stream}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("tenants: %w", err)
	}
	if err := c.buildIndex(); err != nil {
		return nil, fmt.Errorf("tenants: %w", err)
	}
	return c, nil
}

// ValidName checks a tenant name: 1 to 63 characters of a-z, 0-9 and -,
// starting and ending with a letter or digit. The name is a path segment
// of its routes and part of IAM ARNs, so nothing that needs escaping, and
// no upper case (ARNs compare case-sensitively).
func ValidName(name string) error {
	ok := len(name) >= 1 && len(name) <= MaxNameLen && name[0] != '-' && name[len(name)-1] != '-'
	for i := 0; ok && i < len(name); i++ {
		c := name[i]
		ok = c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-'
	}
	if !ok {
		return fmt.Errorf("tenant name %q: want 1 to %d characters of a-z, 0-9 and -, starting and ending with a letter or digit", cut(name), MaxNameLen)
	}
	return nil
}

func checkPrefixes(name string, sources []string) error {
	if len(sources) == 0 {
		return fmt.Errorf("tenant %s: sources is empty; list at least one source prefix, such as %q", name, name+"/")
	}
	for _, p := range sources {
		switch {
		case p == "":
			return fmt.Errorf("tenant %s: an empty source prefix would own every source; name a prefix such as %q", name, name+"/")
		case len(p) > MaxPrefixLen:
			return fmt.Errorf("tenant %s: source prefix %q is %d bytes; a source is at most %d, so it could own none", name, cut(p), len(p), MaxPrefixLen)
		case strings.ContainsRune(p, utf8.RuneError):
			return fmt.Errorf("tenant %s: source prefix %q holds U+FFFD, what invalid UTF-8 or a lone surrogate escape decodes to; write the prefix as valid UTF-8", name, cut(p))
		}
	}
	return nil
}

// buildIndex sorts every prefix and refuses two tenants' that overlap.
// In sorted order a prefix comes before every string that begins with it,
// and a string between the two begins with it too; so a stack of the
// prefixes that begin one another (chain) holds, when a prefix comes, all
// the earlier prefixes it begins with.
func (c *Config) buildIndex() error {
	var all []owned
	for name, t := range c.tenants {
		for _, p := range t.Sources {
			all = append(all, owned{p, name})
		}
	}
	sort.Slice(all, func(i, j int) bool {
		if all[i].prefix != all[j].prefix {
			return all[i].prefix < all[j].prefix
		}
		return all[i].tenant < all[j].tenant
	})
	var errs []error
	var chain []owned
	for _, o := range all {
		for len(chain) > 0 && !strings.HasPrefix(o.prefix, chain[len(chain)-1].prefix) {
			chain = chain[:len(chain)-1]
		}
		for _, u := range chain {
			if u.tenant != o.tenant {
				errs = append(errs, overlapErr(u, o))
			}
		}
		if len(chain) == 0 {
			// A prefix that begins with an earlier one of the same tenant
			// is redundant: the index keeps the shortest, prefix-free.
			c.index = append(c.index, o)
		}
		chain = append(chain, o)
	}
	return errors.Join(errs...)
}

func overlapErr(a, b owned) error {
	how := "begins"
	if a.prefix == b.prefix {
		how = "is"
	}
	return fmt.Errorf("tenant %s's source prefix %q %s tenant %s's source prefix %q, so a source could belong to both; "+
		"change one so that neither begins with the other (a delimiter at the end helps: \"team-a/\" does not begin \"team-ab/\")",
		b.tenant, cut(b.prefix), how, a.tenant, cut(a.prefix))
}

// Len is the number of tenants.
func (c *Config) Len() int {
	if c == nil {
		return 0
	}
	return len(c.tenants)
}

// Names are the tenants' names, sorted.
func (c *Config) Names() []string {
	if c == nil {
		return nil
	}
	return sortedKeys(c.tenants)
}

// Tenant is the named tenant, with its prefixes sorted and without
// repeats, and whether it exists.
func (c *Config) Tenant(name string) (Tenant, bool) {
	if c == nil {
		return Tenant{}, false
	}
	t, ok := c.tenants[name]
	t.Sources = slices.Clone(t.Sources)
	return t, ok
}

// Owner is the tenant that owns source, comparing bytewise, and whether
// one does. It costs one binary search of the prefixes.
func (c *Config) Owner(source string) (string, bool) {
	if c == nil {
		return "", false
	}
	// The greatest prefix not after source is the only one it can begin
	// with: the index is prefix-free.
	i := sort.Search(len(c.index), func(i int) bool { return c.index[i].prefix > source })
	if i == 0 {
		return "", false
	}
	if o := c.index[i-1]; strings.HasPrefix(source, o.prefix) {
		return o.tenant, true
	}
	return "", false
}

// Owns says whether tenant owns source. An unknown tenant owns nothing.
func (c *Config) Owns(tenant, source string) bool {
	owner, ok := c.Owner(source)
	return ok && owner == tenant
}

// String is the canonical JSON of the tenants, which Parse reads back:
// tenants sorted by name, prefixes sorted without repeats, "stream" only
// when true. It is the value of EnvTenants.
func (c *Config) String() string {
	b, _ := json.Marshal(c.Map()) // a map of strings and bools cannot fail
	return string(b)
}

// Map is a copy of the tenants by name.
func (c *Config) Map() map[string]Tenant {
	if c == nil {
		return map[string]Tenant{}
	}
	m := make(map[string]Tenant, len(c.tenants))
	for name := range c.tenants {
		m[name], _ = c.Tenant(name)
	}
	return m
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// cut shortens what an error quotes to 64 bytes.
func cut(s string) string {
	if len(s) <= 64 {
		return s
	}
	i := 64
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "…"
}
