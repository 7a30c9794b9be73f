package ingest

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/shardline/shardline/internal/cloudevent"
	"github.com/shardline/shardline/internal/kpl"
)

// MaxAggregateEvents bounds what one KPL aggregate fans out into: its
// sub-records' events, plus one for each sub-record or array element that
// is refused, at most this many in all; a larger aggregate is quarantined
// whole. Each sub-record is also a record of its own, so it holds at most
// MaxRequestEvents events. Without the bound, one 1 MiB Kinesis record of
// tiny events could ask for tens of thousands of writes, ten times what a
// plain record may. An aggregate of the KPL's default size (at most 51,200
// bytes) cannot reach it: that has room for about 8,500 empty sub-records,
// or 1,500 of the smallest events. One of up to 1 MiB, which a producer may
// configure, can.
const MaxAggregateEvents = 10 * MaxRequestEvents

// part is a piece of a Kinesis record that is read as a record of its own:
// the record itself, or one sub-record of a KPL aggregate.
type part struct {
	data   []byte            // its bytes, which the quarantine keeps if it is refused
	sub    *int              // its index among the aggregate's sub-records; nil for a plain record
	raws   []json.RawMessage // its events: one, or a JSON array's
	array  bool              // whether it was a JSON array
	reason string            // why it is refused whole, when it is
}

// splitter splits Kinesis records, one after another: it reuses its
// slices, so that a plain record costs no allocation to split. What
// kinesis returns is valid until its next call.
type splitter struct {
	parts []part
	raws  []json.RawMessage
}

// kinesis splits a Kinesis record's data into parts: the record itself,
// or each sub-record of a KPL aggregate, each split by splitRecord; a
// reason about the whole of a part names it "data", as the record's field
// is called. reason says why the record is refused whole: a corrupt
// aggregate, or one over MaxAggregateEvents. A sub-record is never read as
// an aggregate itself: the KPL does not nest them.
func (s *splitter) kinesis(data []byte) (parts []part, reason string) {
	if !kpl.IsAggregate(data) {
		raws, array, reason := appendSplitRecord(s.raws[:0], data, kinesisField)
		if raws != nil {
			s.raws = raws[:0]
		}
		s.parts = append(s.parts[:0], part{data: data, raws: raws, array: array, reason: reason})
		return s.parts, ""
	}
	recs, err := kpl.Deaggregate(data, MaxAggregateEvents)
	if err != nil {
		return nil, err.Error()
	}
	parts = make([]part, len(recs))
	subs := make([]int, len(recs)) // one allocation for every sub-record's index
	fanout := 0
	for k, r := range recs {
		subs[k] = k
		parts[k] = plainPart(r.Data, &subs[k], kinesisField)
		fanout += max(len(parts[k].raws), 1)
	}
	if fanout > MaxAggregateEvents {
		return nil, fmt.Sprintf("kpl: its %d sub-records hold %d events; at most %d per aggregate", len(recs), fanout, MaxAggregateEvents)
	}
	return parts, ""
}

// kinesisField is what a reason calls a Kinesis record's data as a whole.
const kinesisField = "data"

// plainPart is data read as a plain record; field names the data as a
// whole in a reason ("data" for a Kinesis record, "body" for a request).
func plainPart(data []byte, sub *int, field string) part {
	raws, array, reason := splitRecord(data, field)
	return part{data: data, sub: sub, raws: raws, array: array, reason: reason}
}

// splitRecord splits a record's data into its events, one or a JSON array,
// or says why the record is refused whole. Kinesis and replay read records
// with it alike (reader.read), so that both apply the same rules.
func splitRecord(data []byte, field string) (raws []json.RawMessage, array bool, reason string) {
	return appendSplitRecord(nil, data, field)
}

// appendSplitRecord is splitRecord appending the events to dst, which must
// be empty.
func appendSplitRecord(dst []json.RawMessage, data []byte, field string) (raws []json.RawMessage, array bool, reason string) {
	raws, array, err := cloudevent.AppendSplit(dst, data)
	if err != nil {
		var fe *cloudevent.FieldError // declared here: errors.As makes it escape, which only an error should pay for
		if errors.As(err, &fe) && fe.Field == "body" {
			return nil, array, field + ": " + fe.Problem
		}
		return nil, array, err.Error()
	}
	switch {
	case len(raws) == 0:
		return nil, array, "record: holds an empty array, no events"
	case len(raws) > MaxRequestEvents:
		// One record must not fan out into unbounded writes.
		return nil, array, fmt.Sprintf("record: holds %d events; at most %d per record", len(raws), MaxRequestEvents)
	}
	return raws, array, ""
}
