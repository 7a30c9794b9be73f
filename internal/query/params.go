package query

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
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

// ParamError is a bad parameter, named.
type ParamError struct {
	Param   string
	Problem string
}

// Error reads "parameter: problem".
func (e *ParamError) Error() string { return e.Param + ": " + e.Problem }

func perr(param, format string, args ...any) error {
	return &ParamError{Param: param, Problem: fmt.Sprintf(format, args...)}
}

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
	vals, err := url.ParseQuery(rawQuery)
	if err != nil {
		return p, perr("query", "cannot be parsed: %v", err)
	}
	for name, vs := range vals {
		if name == "" {
			return p, perr("query", "has a value with no parameter name")
		}
		if !allowed[kind][name] {
			return p, perr(name, "is not a parameter here; see the API reference in the README")
		}
		if len(vs) > 1 {
			return p, perr(name, "is given %d times; give it once", len(vs))
		}
		if !utf8.ValidString(vs[0]) {
			return p, perr(name, "is not valid UTF-8")
		}
	}
	get := func(name string) (string, bool) {
		vs, ok := vals[name]
		if !ok {
			return "", false
		}
		return vs[0], true
	}
	if kind == Events {
		src, ok := get("source")
		switch {
		case !ok || src == "":
			return p, perr("source", "is required")
		case len(src) > cloudevent.MaxAttrBytes:
			return p, perr("source", "is %d bytes; sources are at most %d", len(src), cloudevent.MaxAttrBytes)
		}
		p.Source = src
		for _, f := range []struct {
			name string
			dst  *string
		}{{"type", &p.Type}, {"subject", &p.Subject}} {
			if v, ok := get(f.name); ok {
				if v == "" {
					return p, perr(f.name, "is empty; leave it out to match every %s", f.name)
				}
				*f.dst = v
			}
		}
		if v, ok := get("consistent"); ok {
			b, err := strconv.ParseBool(v)
			if err != nil {
				return p, perr("consistent", "is %q; want true or false", v)
			}
			p.Consistent = b
		}
	}
	if v, ok := get("limit"); ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > MaxLimit {
			return p, perr("limit", "is %q; want a whole number from 1 to %d", v, MaxLimit)
		}
		p.Limit = n
	}
	if v, ok := get("order"); ok {
		switch Order(v) {
		case Asc, Desc:
			p.Order = Order(v)
		default:
			return p, perr("order", "is %q; want asc or desc", v)
		}
	}
	fromS, hasFrom := get("from")
	toS, hasTo := get("to")
	p.explicitRange = hasFrom || hasTo
	if hasFrom {
		if p.From, err = parseTime("from", fromS); err != nil {
			return p, err
		}
	}
	if hasTo {
		if p.To, err = parseTime("to", toS); err != nil {
			return p, err
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
		return p, perr("from", "%s is not before to %s", p.From.Format(time.RFC3339Nano), p.To.Format(time.RFC3339Nano))
	}
	if p.To.Sub(p.From) > MaxRange {
		return p, perr("to", "the range from %s to %s is longer than 31 days; page through shorter ranges",
			p.From.Format(time.RFC3339Nano), p.To.Format(time.RFC3339Nano))
	}
	if v, ok := get("cursor"); ok {
		c, err := keys.Decode(v)
		if err != nil {
			return p, err
		}
		if err := c.bind(kind, &p); err != nil {
			return p, err
		}
		p.Cursor = c
	}
	return p, nil
}

func parseTime(name, s string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil && strings.Contains(s, " ") {
		// An unencoded "+01:00" arrives as " 01:00": take it as meant.
		t, err = time.Parse(time.RFC3339Nano, strings.ReplaceAll(s, " ", "+"))
	}
	if err != nil {
		return t, perr(name, "%q is not an RFC 3339 time such as 2026-11-22T10:00:00Z", s)
	}
	if t.Year() < 1970 || t.Year() > 9999 {
		return t, perr(name, "%s is out of range", s)
	}
	return t.UTC(), nil
}
