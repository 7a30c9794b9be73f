package query

import (
	"github.com/shardline/shardline/internal/params"
	"net/url"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/shardline/shardline/internal/cloudevent"
)

// Bounds of the query parameters.
const (
	DefaultLimit = 100
	MaxLimit     = 1000
	DefaultRange = time.Hour
	MaxRange     = 31 * 24 * time.Hour
)

// Order is the order of a page.
type Order string

// The orders.
const (
	Asc  Order = "asc"  // by time, then id bytewise
	Desc Order = "desc" // exactly the reverse; the default
)

// Params is a parsed query.
type Params struct {
	Source     string // empty for the quarantine
	From, To   time.Time
	Limit      int
	Order      Order
	Type       string // "" when not filtered
	Subject    string
	Consistent bool
	Cursor     *Cursor // nil on the first page

	explicitRange bool // from or to was given
}

// ParamError is a bad parameter, named: the same error every read route
// answers with a 400.
type ParamError = params.Error

func perr(param, format string, args ...any) error { return params.Errorf(param, format, args...) }

// Kind is what a query reads: events of a source, or the quarantine.
type Kind byte

// The kinds.
const (
	Events     Kind = 'E'
	Quarantine Kind = 'Q'
)

var allowed = map[Kind]map[string]bool{
	Events:     {"source": true, "from": true, "to": true, "limit": true, "order": true, "type": true, "subject": true, "consistent": true, "cursor": true},
	Quarantine: {"from": true, "to": true, "limit": true, "order": true, "cursor": true},
}

// ParseParams reads a raw query string for kind. now sets the default range
// (the hour before now); keys verifies cursors. Every error is a
// *ParamError naming the parameter.
func ParseParams(kind Kind, rawQuery string, now time.Time, keys *Keys) (Params, error) {
	p := Params{Limit: DefaultLimit, Order: Desc}
	vals, err := values(kind, rawQuery)
	if err != nil {
		return p, err
	}
	if kind == Events {
		if err := vals.selection(&p); err != nil {
			return p, err
		}
	}
	if err := vals.paging(&p); err != nil {
		return p, err
	}
	if err := vals.timeRange(&p, now); err != nil {
		return p, err
	}
	return p, vals.cursor(kind, &p, keys)
}

// rawParams are the parameters of a query string, each given once.
type rawParams url.Values

// values parses rawQuery, and refuses a parameter that kind does not take,
// one given twice, and one that is not UTF-8.
func values(kind Kind, rawQuery string) (rawParams, error) {
	vals, err := url.ParseQuery(rawQuery)
	if err != nil {
		return nil, perr("query", "cannot be parsed: %v", err)
	}
	for name, vs := range vals {
		if name == "" {
			return nil, perr("query", "has a value with no parameter name")
		}
		if !allowed[kind][name] {
			return nil, perr(name, "is not a parameter here; see the API reference, docs/api.md")
		}
		if len(vs) > 1 {
			return nil, perr(name, "is given %d times; give it once", len(vs))
		}
		if !utf8.ValidString(vs[0]) {
			return nil, perr(name, "is not valid UTF-8")
		}
	}
	return rawParams(vals), nil
}

// get is the value of the parameter name, and whether it was given.
func (v rawParams) get(name string) (string, bool) {
	vs, ok := v[name]
	if !ok {
		return "", false
	}
	return vs[0], true
}

// selection reads which events: source, the type and subject filters, and
// consistent.
func (v rawParams) selection(p *Params) error {
	src, ok := v.get("source")
	switch {
	case !ok || src == "":
		return perr("source", "is required")
	case len(src) > cloudevent.MaxAttrBytes:
		return perr("source", "is %d bytes; sources are at most %d", len(src), cloudevent.MaxAttrBytes)
	}
	p.Source = src
	for _, f := range []struct {
		name string
		dst  *string
	}{{"type", &p.Type}, {"subject", &p.Subject}} {
		if s, ok := v.get(f.name); ok {
			if s == "" {
				return perr(f.name, "is empty; leave it out to match every %s", f.name)
			}
			*f.dst = s
		}
	}
	if s, ok := v.get("consistent"); ok {
		b, err := strconv.ParseBool(s)
		if err != nil {
			return perr("consistent", "is %q; want true or false", s)
		}
		p.Consistent = b
	}
	return nil
}

// paging reads limit and order.
func (v rawParams) paging(p *Params) error {
	if s, ok := v.get("limit"); ok {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > MaxLimit {
			return perr("limit", "is %q; want a whole number from 1 to %d", s, MaxLimit)
		}
		p.Limit = n
	}
	if s, ok := v.get("order"); ok {
		switch Order(s) {
		case Asc, Desc:
			p.Order = Order(s)
		default:
			return perr("order", "is %q; want asc or desc", s)
		}
	}
	return nil
}

// timeRange reads from and to. A bound left out is the other less or plus
// DefaultRange, or now.
func (v rawParams) timeRange(p *Params, now time.Time) error {
	fromS, hasFrom := v.get("from")
	toS, hasTo := v.get("to")
	p.explicitRange = hasFrom || hasTo
	var err error
	if hasFrom {
		if p.From, err = parseTime("from", fromS); err != nil {
			return err
		}
	}
	if hasTo {
		if p.To, err = parseTime("to", toS); err != nil {
			return err
		}
	}
	switch {
	case hasFrom && !hasTo:
		p.To = now.UTC()
	case hasTo && !hasFrom:
		p.From = p.To.Add(-DefaultRange)
	case !hasFrom && !hasTo:
		p.To = now.UTC()
		p.From = p.To.Add(-DefaultRange)
	}
	if !p.From.Before(p.To) {
		return perr("from", "%s is not before to %s", p.From.Format(time.RFC3339Nano), p.To.Format(time.RFC3339Nano))
	}
	if p.To.Sub(p.From) > MaxRange {
		return perr("to", "the range from %s to %s is longer than 31 days; page through shorter ranges",
			p.From.Format(time.RFC3339Nano), p.To.Format(time.RFC3339Nano))
	}
	return nil
}

// cursor reads the cursor, checks that it belongs to the query, and takes
// its range when the query left the range to the default. That range is
// checked as the parameters' is: a cursor is signed, but a signature
// proves only who made it, and an old or leaked key could sign any range.
func (v rawParams) cursor(kind Kind, p *Params, keys *Keys) error {
	s, ok := v.get("cursor")
	if !ok {
		return nil
	}
	c, err := keys.Decode(s)
	if err != nil {
		return err
	}
	if err := c.bind(kind, p); err != nil {
		return err
	}
	if !p.From.Before(p.To) || p.To.Sub(p.From) > MaxRange {
		return perr("cursor", "carries the range %s to %s, which is empty or longer than 31 days; start again without it",
			p.From.Format(time.RFC3339Nano), p.To.Format(time.RFC3339Nano))
	}
	p.Cursor = c
	return nil
}

// parseTime reads a time as RFC 3339 or epoch milliseconds, as every read
// route does.
func parseTime(name, s string) (time.Time, error) { return params.ParseTime(name, s) }
