package query

import (
	"time"

	"github.com/shardline/shardline/internal/cloudevent"
	"github.com/shardline/shardline/internal/params"
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
	// Tenant is the tenant whose route the query came on, "" on the
	// /v1/... routes: its cursors are valid on its route only, and its
	// quarantine lists only what arrived for it.
	Tenant string

	explicitRange bool // from or to was given
}

// ParamError is a bad parameter, named: the same error every read route
// answers with a 400.
type ParamError = params.Error

// Kind is what a query reads: events of a source, or the quarantine.
type Kind byte

// The kinds.
const (
	Events     Kind = 'E'
	Quarantine Kind = 'Q'
)

// allowed lists the parameters each kind takes, in the order the API
// reference gives them.
var allowed = map[Kind][]string{
	Events:     {"source", "from", "to", "limit", "order", "type", "subject", "consistent", "cursor"},
	Quarantine: {"from", "to", "limit", "order", "cursor"},
}

// ParseParams reads a raw query string for kind with internal/params, as
// every read route does. now sets the default range (the hour before now);
// keys verifies cursors. Every error is a *ParamError naming the
// parameter.
func ParseParams(kind Kind, rawQuery string, now time.Time, keys *Keys) (Params, error) {
	return parseParams(kind, "", rawQuery, now, keys)
}

// parseParams is ParseParams on tenant's route ("" on the /v1/... ones).
func parseParams(kind Kind, tenant, rawQuery string, now time.Time, keys *Keys) (Params, error) {
	p := Params{Limit: DefaultLimit, Order: Desc, Tenant: tenant}
	vals, err := params.Parse(rawQuery, allowed[kind]...)
	if err != nil {
		return p, err
	}
	if kind == Events {
		if err := selection(vals, &p); err != nil {
			return p, err
		}
	}
	if err := paging(vals, &p); err != nil {
		return p, err
	}
	rg, err := vals.Range(now, DefaultRange, MaxRange)
	if err != nil {
		return p, err
	}
	p.From, p.To, p.explicitRange = rg.From, rg.To, rg.Explicit
	return p, cursor(vals, kind, &p, keys)
}

// selection reads which events: source, the type and subject filters, and
// consistent.
func selection(v params.Values, p *Params) (err error) {
	if p.Source, err = v.Required("source", cloudevent.MaxAttrBytes); err != nil {
		return err
	}
	if p.Type, err = v.Filter("type", cloudevent.MaxAttrBytes); err != nil {
		return err
	}
	if p.Subject, err = v.Filter("subject", cloudevent.MaxAttrBytes); err != nil {
		return err
	}
	p.Consistent, err = v.Bool("consistent", false)
	return err
}

// paging reads limit and order.
func paging(v params.Values, p *Params) (err error) {
	if p.Limit, err = v.Int("limit", 1, MaxLimit, DefaultLimit); err != nil {
		return err
	}
	o, err := v.Choice("order", string(Desc), string(Asc), string(Desc))
	p.Order = Order(o)
	return err
}

// cursor reads the cursor, checks that it belongs to the query, and takes
// its range when the query left the range to the default. That range is
// checked as the parameters' is: a cursor is signed, but a signature
// proves only who made it, and an old or leaked key could sign any range.
func cursor(v params.Values, kind Kind, p *Params, keys *Keys) error {
	s, ok := v.Get("cursor")
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
	if (params.Range{From: p.From, To: p.To}).Check(MaxRange) != nil {
		return params.Errorf("cursor", "carries the range %s to %s, which is empty or longer than %s; start again without it",
			p.From.Format(time.RFC3339Nano), p.To.Format(time.RFC3339Nano), params.Days(MaxRange))
	}
	p.Cursor = c
	return nil
}
