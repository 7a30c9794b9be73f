package ingest

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/shardline/shardline/internal/cloudevent"
	"github.com/shardline/shardline/internal/item"
	"github.com/shardline/shardline/internal/writer"
)

// Quarantined is a quarantined record given back to Reingest: the bytes the
// quarantine kept (whole: a truncated record cannot be checked again), where
// they came from, when they were received, and why they were refused.
type Quarantined struct {
	Raw      []byte
	Origin   item.Origin
	Received time.Time
	Reason   string
}

// Reingested is what Reingest made of one record.
type Reingested struct {
	// Events is how many of its events are valid now and were stored (in
	// a dry run: would be).
	Events int
	// Invalid says why each of its other parts is still refused: one
	// reason for a single event or a record refused whole, "event 3: ..."
	// for an event of a JSON array.
	Invalid []string
	// Err is set when some of its events could not be stored for now
	// (throttling, an unavailable table, the context's end). Nothing else
	// is wrong: the same call again stores them.
	Err error
}

// Reingest checks quarantined records again under the handler's current
// configuration (MAX_EVENT_BYTES, RETENTION_DAYS, the clock), reading each
// as first ingest read it (reread). Unless dryRun, it then stores the
// events that are valid now exactly as Kinesis and HTTP do: shard
// schedules, hour index and catalogue first, then each event's item under
// its key, so that storing one twice leaves one item.
//
// An event without a time is stamped with rec.Received: the quarantine
// keeps as a record's received time the very stamp first ingest gave its
// events (a Kinesis record's arrival time, an API request's time), so a
// replayed event gets the key it would have had, on every replay.
//
// Nothing is quarantined again: the records already are. An event that
// storage refuses is reported in Invalid.
func (h *Handler) Reingest(ctx context.Context, recs []Quarantined, dryRun bool) []Reingested {
	start := h.now()
	out := make([]Reingested, len(recs))
	r := h.newReader(start, len(recs), true)
	var units []unit
	var labels []string // per unit, how Invalid names it
	for i, rec := range recs {
		if requestFraming(rec) {
			out[i].Invalid = []string{rec.Reason}
			continue
		}
		for _, u := range h.reread(r, nil, i, rec) {
			if u.event == nil {
				out[i].Invalid = append(out[i].Invalid, label(u, u.rejected.Reason))
				continue
			}
			units = append(units, u)
			labels = append(labels, label(u, ""))
		}
	}
	if dryRun {
		for _, u := range units {
			out[u.group].Events++
		}
		return out
	}
	st := h.restore(ctx, units, labels, out)
	var stored, failed int
	for _, r := range out {
		stored += r.Events
		if r.Err != nil {
			failed++
		}
	}
	h.report(ctx, "replay", stored, 0, failed, st, start)
	return out
}

// reread appends to units a quarantined record's units as first ingest
// would read it now (reader). A record with an origin index is one event
// of an array, parsed whole. A whole Kinesis record may be a KPL aggregate
// (one quarantined as corrupt, or before ingest read aggregates): it is
// de-aggregated as Kinesis does. A quarantined sub-record (an origin with
// a sub_index) holds the sub-record's own bytes, and is read as a plain
// record; so is anything else. A record that arrived on a tenant's route
// or own stream is checked again as ingest checks it. The units' origins
// place them in the record itself, for label.
func (h *Handler) reread(r *reader, units []unit, group int, rec Quarantined) []unit {
	o := rec.Origin
	o.Index, o.SubIndex = nil, nil
	if o.Tenant == "" {
		o.Tenant, _ = h.cfg.Tenants.StreamOwner(o.StreamARN)
	}
	in := record{data: rec.Raw, origin: o, received: rec.Received, group: group, field: kinesisField,
		kpl: rec.Origin.SequenceNumber != "" && rec.Origin.SubIndex == nil}
	if rec.Origin.Index != nil {
		return r.event(units, in, rec.Raw, o, cloudevent.Parse)
	}
	if rec.Origin.RequestID != "" {
		in.field = "body"
	}
	return r.read(units, in)
}

// label is how a replay names u, a unit reread read, in its messages
// ("event", "event 3", "sub-record 2: event 3"), or, with reason, says why
// it is refused ("sub-record 2: event 3: id: is required").
func label(u unit, reason string) string {
	prefix := ""
	if u.origin.SubIndex != nil {
		prefix = fmt.Sprintf("sub-record %d: ", *u.origin.SubIndex)
	}
	name := "event"
	if u.origin.Index != nil {
		name = fmt.Sprintf("event %d", *u.origin.Index)
	}
	switch {
	case reason == "":
		return prefix + name
	case u.origin.Index != nil:
		return prefix + name + ": " + reason
	}
	return prefix + reason
}

// requestFraming: the record came in an API request and was refused for
// how the request carried it — its body as a whole, its Content-Type, or a
// ce-* header of the binary content mode — rather than for an event's
// content. Those rules do not depend on the configuration, and the bytes
// kept cannot show them again: a binary-mode event is kept in structured
// form, rebuilt from its headers, with a header that could not be decoded
// kept as sent or left out, and a body that was not the JSON its
// Content-Type said kept as data_base64. Checked again, such a record could
// pass, and store an event that no request can deliver. It stays refused.
//
// ce-time is the exception: its value is kept as sent when it could not be
// decoded, which no RFC 3339 parse accepts, so a check of the time (the
// retention window, the future bound, which move with the clock and
// RETENTION_DAYS) is as good on the kept bytes as on the request.
func requestFraming(rec Quarantined) bool {
	if rec.Origin.RequestID == "" {
		return false
	}
	field, _, ok := strings.Cut(rec.Reason, ": ")
	if !ok {
		return false
	}
	return field == "body" || field == "Content-Type" || (strings.HasPrefix(field, "ce-") && field != "ce-time")
}

// restore writes the units' events through the ingest write path, and
// records in out what became of each.
func (h *Handler) restore(ctx context.Context, units []unit, labels []string, out []Reingested) storeStats {
	var st storeStats
	if len(units) == 0 {
		return st
	}
	b := newBatch(units, false)
	err := h.build(ctx, b, b.all())
	st.firstErr = err
	res := h.writer.Write(ctx, b.items)
	st.requests, st.retried, st.wcu = res.Requests, res.Retried, res.WCU
	written := make([]bool, len(units))
	for n, u := range b.idx {
		written[u] = true
		r := &out[units[u].group]
		switch res.Status[n] {
		case writer.Stored:
			r.Events++
		case writer.Invalid:
			r.Invalid = append(r.Invalid, fmt.Sprintf("%s: storage refused it: %v", labels[u], res.Err[n]))
		default:
			if r.Err == nil {
				r.Err = res.Err[n]
			}
			if st.firstErr == nil {
				st.firstErr = res.Err[n]
			}
		}
	}
	for u, ok := range written {
		if r := &out[units[u].group]; !ok && r.Err == nil {
			r.Err = err // its shard schedule could not be read
		}
	}
	return st
}
