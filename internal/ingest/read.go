package ingest

import (
	"fmt"
	"time"

	"github.com/shardline/shardline/internal/cloudevent"
	"github.com/shardline/shardline/internal/echo"
	"github.com/shardline/shardline/internal/item"
	"github.com/shardline/shardline/internal/tenant"
)

// reader reads records into units, the one reading that Kinesis, the API
// and reingest share: a record split into its events (a KPL aggregate into
// its sub-records first), each event parsed and, on a tenant's record,
// checked to be the tenant's. What each caller reports of the units is its
// own (docs/api.md).
type reader struct {
	now     time.Time // the validation clock
	limits  cloudevent.Limits
	tenants *tenant.Config
	// checkTenants: each event of a record whose origin names a tenant is
	// checked to be the tenant's. Not for the API, whose route refuses a
	// tenant's request whole (checkSources).
	checkTenants bool
	evs          []cloudevent.Event // the units' events: one allocation for many
	split        splitter
	refused      int    // events refused for not being their tenant's
	declared     string // the last tenant found declared: a batch's records mostly share one
}

// newReader is a reader validating at now, sized for about n events, that
// checks tenants' records against h's tenants when tenants is true.
func (h *Handler) newReader(now time.Time, n int, tenants bool) *reader {
	return &reader{now: now, limits: h.limits(), evs: make([]cloudevent.Event, 0, n), tenants: h.cfg.Tenants, checkTenants: tenants}
}

// record is what the reader reads: a record's bytes, where they came from
// and when they were received, and the group its units report on.
type record struct {
	data     []byte
	origin   item.Origin
	received time.Time
	group    int
	kpl      bool   // the data may be a KPL aggregate (a Kinesis record)
	field    string // what a reason calls the data as a whole, when not kpl
}

// read appends rec's units to units: its events, and what must be
// quarantined, each unit's origin placing it in the record (SubIndex,
// Index).
func (r *reader) read(units []unit, rec *record) []unit {
	if !rec.kpl {
		return r.part(units, rec, plainPart(rec.data, nil, rec.field))
	}
	parts, reason := r.split.kinesis(rec.data)
	if reason != "" {
		return append(units, rejectedUnit(rec.group, rec.data, reason, rec.origin, rec.received))
	}
	for _, p := range parts {
		units = r.part(units, rec, p)
	}
	return units
}

// part appends the units of p, a piece of rec read as a record of its own.
func (r *reader) part(units []unit, rec *record, p part) []unit {
	o := rec.origin
	if p.sub != nil {
		o.SubIndex = p.sub
	}
	if p.reason != "" {
		return append(units, rejectedUnit(rec.group, p.data, p.reason, o, rec.received))
	}
	for j, raw := range p.raws {
		o := o
		if p.array {
			j := j // escapes: declared here, only an array's events pay for it
			o.Index = &j
		}
		units = r.event(units, rec, raw, &o, cloudevent.ParseElement)
	}
	return units
}

// parser is cloudevent.ParseElement, or cloudevent.Parse for bytes not
// split by the reader.
type parser func(raw []byte, now, stamp time.Time, lim cloudevent.Limits) (cloudevent.Event, error)

// event appends the unit of raw, one event of rec at o: its event, or the
// record to quarantine with why it is refused.
func (r *reader) event(units []unit, rec *record, raw []byte, o *item.Origin, parse parser) []unit {
	e, err := parse(raw, r.now, rec.received, r.limits)
	if err != nil {
		return append(units, rejectedUnit(rec.group, raw, err.Error(), *o, rec.received))
	}
	if why := r.notTenants(o.Tenant, e.Source); why != "" {
		r.refused++
		return append(units, rejectedUnit(rec.group, raw, why, *o, rec.received))
	}
	r.evs = append(r.evs, e) // a pointer into a grown slice stays valid: events are not changed after parsing
	return append(units, unit{group: rec.group, event: &r.evs[len(r.evs)-1], origin: *o, received: rec.received})
}

// notTenants says why an event of source, in a record of tenant name,
// is refused for its tenant, or "" when it is not: a record of no tenant
// is not checked, and one whose tenant this configuration does not
// declare (a replay's) stays refused.
func (r *reader) notTenants(name, source string) string {
	if name == "" || !r.checkTenants {
		return ""
	}
	if name != r.declared {
		if _, ok := r.tenants.Tenant(name); !ok {
			return tenant.ReasonPrefix + fmt.Sprintf("the record arrived for tenant %s, which this configuration does not declare; "+
				"set %s (and %s) as the stack sets them for the ingest function", echo.Quote(name), tenant.EnvTenants, tenant.EnvStreams)
		}
		r.declared = name
	}
	if !r.tenants.Owns(name, source) {
		return tenant.ReasonPrefix + tenant.NotOwned(name, source)
	}
	return ""
}
