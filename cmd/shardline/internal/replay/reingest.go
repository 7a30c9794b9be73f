package replay

import (
	"context"
	"fmt"
	"strings"

	"github.com/shardline/shardline/internal/ingest"
)

// reingested is what reingest made of one record.
type reingested struct {
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

// reingest checks quarantined records again under h's current
// configuration, reading each as first ingest read it
// (ingest.Pass.Read), and unless dryRun stores the events that are valid
// now through the ingest write path (ingest.Pass.Store), so that storing
// one twice leaves one item (docs/operations.md).
//
// An event without a time is stamped with the record's received time: the
// quarantine keeps the very stamp first ingest gave its events (a Kinesis
// record's arrival time, an API request's time), so a replayed event gets
// the key it would have had, on every replay.
//
// Nothing is quarantined again: the records already are. An event that
// storage refuses is reported in Invalid.
func reingest(ctx context.Context, h *ingest.Handler, recs []Record, dryRun bool) []reingested {
	pass := h.Pass()
	out := make([]reingested, len(recs))
	var valid []ingest.Part
	var groups []int
	for i, rec := range recs {
		if requestFraming(rec) {
			out[i].Invalid = []string{rec.Reason}
			continue
		}
		for _, p := range pass.Read(rec.Raw, rec.Origin, rec.ReceivedAt, i) {
			if !p.Valid() {
				out[i].Invalid = append(out[i].Invalid, label(p, p.Reason()))
				continue
			}
			valid = append(valid, p)
			groups = append(groups, i)
		}
	}
	if dryRun {
		for _, i := range groups {
			out[i].Events++
		}
		return out
	}
	for k, w := range pass.Store(ctx, valid) {
		r := &out[groups[k]]
		switch {
		case w.Stored:
			r.Events++
		case w.Refused != nil:
			r.Invalid = append(r.Invalid, fmt.Sprintf("%s: storage refused it: %v", label(valid[k], ""), w.Refused))
		case r.Err == nil:
			r.Err = w.Err
		}
	}
	return out
}

// label is how a replay names p in its messages ("event", "event 3",
// "sub-record 2: event 3"), or, with reason, says why it is refused
// ("sub-record 2: event 3: id: is required").
func label(p ingest.Part, reason string) string {
	prefix := ""
	if sub := p.Sub(); sub != nil {
		prefix = fmt.Sprintf("sub-record %d: ", *sub)
	}
	name := "event"
	if i := p.Index(); i != nil {
		name = fmt.Sprintf("event %d", *i)
	}
	switch {
	case reason == "":
		return prefix + name
	case p.Index() != nil:
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
func requestFraming(rec Record) bool {
	if rec.Origin.RequestID == "" {
		return false
	}
	field, _, ok := strings.Cut(rec.Reason, ": ")
	if !ok {
		return false
	}
	return field == "body" || field == "Content-Type" || (strings.HasPrefix(field, "ce-") && field != "ce-time")
}
