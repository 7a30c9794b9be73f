package ingest

import (
	"context"
	"time"

	"github.com/shardline/shardline/internal/cloudevent"
	"github.com/shardline/shardline/internal/item"
	"github.com/shardline/shardline/internal/writer"
)

// Pass is a quarantine replay's way through ingest, the operator's
// (docs/operations.md): records read again as first ingest read them
// (Read), and the events valid now stored through the write path (Store).
// Start one per batch of records with Handler.Pass.
type Pass struct {
	h     *Handler
	start time.Time
	r     *reader
}

// Pass starts a replay's pass under the handler's current configuration
// (MAX_EVENT_BYTES, RETENTION_DAYS, tenants), its clock read once, now.
func (h *Handler) Pass() *Pass {
	start := h.now()
	return &Pass{h: h, start: start, r: h.newReader(start, 0, true)}
}

// Part is one part of a record Read: an event valid now, or a part that
// is refused and why. Sub and Index place it in the record.
type Part struct{ u unit }

// Valid says whether the part is an event valid now, which Store stores.
func (p Part) Valid() bool { return p.u.event != nil }

// Reason says why the part is refused; "" for a valid part.
func (p Part) Reason() string {
	if p.u.rejected == nil {
		return ""
	}
	return p.u.rejected.Reason
}

// Sub is the part's index among a KPL aggregate's sub-records, or nil.
func (p Part) Sub() *int { return p.u.origin.SubIndex }

// Index is the part's index in a JSON array of events, or nil.
func (p Part) Index() *int { return p.u.origin.Index }

// Read reads a quarantined record, raw, as first ingest would read it now
// (docs/operations.md): a record whose origin has an index is one event of
// an array; a whole Kinesis record may be a KPL aggregate, read
// sub-record by sub-record; anything else (a quarantined sub-record
// included) is one event or a JSON array of them. An event without a time
// is stamped with received. A record that arrived on a tenant's route or
// own stream is checked again as ingest checks it. Its parts are placed in
// the record itself, and tied to group for Store's report.
func (p *Pass) Read(raw []byte, o item.Origin, received time.Time, group int) []Part {
	in := record{data: raw, origin: o, received: received, group: group, field: kinesisField,
		kpl: o.SequenceNumber != "" && o.SubIndex == nil}
	if in.origin.Tenant == "" {
		in.origin.Tenant, _ = p.h.cfg.Tenants.StreamOwner(o.StreamARN)
	}
	in.origin.Index, in.origin.SubIndex = nil, nil
	if o.RequestID != "" {
		in.field = "body"
	}
	var units []unit
	if o.Index != nil {
		units = p.r.event(nil, &in, raw, &in.origin, cloudevent.Parse)
	} else {
		units = p.r.read(nil, &in)
	}
	parts := make([]Part, len(units))
	for i, u := range units {
		parts[i] = Part{u}
	}
	return parts
}

// Written is what Store made of one part: Stored, or refused by DynamoDB
// (Refused says why), or not stored for now (Err: throttling, an
// unavailable table, its shard schedule unread, the context's end; the
// same call again stores it).
type Written struct {
	Stored  bool
	Refused error
	Err     error
}

// Store writes the valid parts' events exactly as Kinesis and HTTP do:
// shard schedules, hour index and catalogue first, then each event's item
// under its key, so that storing one twice leaves one item. Nothing is
// quarantined. It reports the pass as the "replay" invocation: the events
// stored, and the groups of which some were not.
func (p *Pass) Store(ctx context.Context, parts []Part) []Written {
	out := make([]Written, len(parts))
	if len(parts) == 0 {
		p.h.report(ctx, "replay", 0, 0, 0, storeStats{}, p.start)
		return out
	}
	units := make([]unit, len(parts))
	for i, pt := range parts {
		units[i] = pt.u
	}
	b := newBatch(units, false)
	err := p.h.build(ctx, b, b.all())
	st := storeStats{firstErr: err}
	res := p.h.writer.Write(ctx, b.items)
	st.requests, st.retried, st.wcu = res.Requests, res.Retried, res.WCU
	written := make([]bool, len(units))
	for n, u := range b.idx {
		written[u] = true
		switch res.Status[n] {
		case writer.Stored:
			out[u].Stored = true
		case writer.Invalid:
			out[u].Refused = res.Err[n]
		default:
			out[u].Err = res.Err[n]
			if st.firstErr == nil {
				st.firstErr = res.Err[n]
			}
		}
	}
	stored, failed := 0, map[int]bool{}
	for u, ok := range written {
		if !ok {
			out[u].Err = err // its shard schedule could not be read
		}
		if out[u].Stored {
			stored++
		} else if out[u].Err != nil {
			failed[units[u].group] = true
		}
	}
	p.h.report(ctx, "replay", stored, 0, len(failed), st, p.start)
	return out
}
