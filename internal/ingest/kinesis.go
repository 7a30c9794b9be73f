package ingest

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/shardline/shardline/internal/cloudevent"
	"github.com/shardline/shardline/internal/deadline"
	"github.com/shardline/shardline/internal/item"
)

// Kinesis ingests a batch of Kinesis records. Each record's data is one
// CloudEvent or a JSON array of them. Events without a time get the record's
// approximate arrival time, which is the same on every retry, so a retried
// record lands on the same items.
//
// A record holds at most MaxRequestEvents events, like an API request; a
// longer array is quarantined whole.
//
// The response lists, by sequence number, the records that could not be
// stored for now (throttling, an unavailable table, the deadline): Lambda
// sends them again. Records that are not valid events are quarantined and not
// listed: they are stored, and sending them again would not help.
func (h *Handler) Kinesis(ctx context.Context, ev events.KinesisEvent) (events.KinesisEventResponse, error) {
	start := h.now()
	ctx, cancel := deadline.Budget(ctx)
	defer cancel()
	now := h.now()
	units := make([]unit, 0, len(ev.Records))
	evs := make([]cloudevent.Event, 0, len(ev.Records)) // one allocation for the usual one event a record
	for i, rec := range ev.Records {
		// Kinesis stamps arrival in milliseconds; the float seconds of the
		// event carry noise below that.
		arrival := rec.Kinesis.ApproximateArrivalTimestamp.UTC().Round(time.Millisecond)
		if arrival.IsZero() {
			arrival = now
		}
		origin := item.Origin{
			StreamARN:      rec.EventSourceArn,
			ShardID:        shardID(rec.EventID),
			SequenceNumber: rec.Kinesis.SequenceNumber,
		}
		reject := func(raw []byte, reason string, o item.Origin) {
			units = append(units, rejectedUnit(i, raw, reason, o, arrival))
		}
		raws, array, reason := splitRecord(rec.Kinesis.Data)
		if reason != "" {
			reject(rec.Kinesis.Data, reason, origin)
			continue
		}
		for j, raw := range raws {
			o := origin
			if array {
				o.Index = &j
			}
			e, err := cloudevent.ParseElement(raw, now, arrival, h.limits())
			if err != nil {
				reject(raw, err.Error(), o)
				continue
			}
			evs = append(evs, e) // a pointer into a grown slice stays valid: events are not changed after parsing
			units = append(units, unit{group: i, event: &evs[len(evs)-1], origin: o, received: arrival})
		}
	}
	outcomes, st := h.store(ctx, units)
	failedRec := make([]bool, len(ev.Records))
	var accepted, rejected, failed int
	for n, u := range units {
		switch outcomes[n] {
		case stored:
			accepted++
		case quarantined:
			rejected++
		default:
			failed++
			failedRec[u.group] = true
		}
	}
	resp := events.KinesisEventResponse{BatchItemFailures: []events.KinesisBatchItemFailure{}}
	for i, f := range failedRec {
		if f {
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.KinesisBatchItemFailure{ItemIdentifier: ev.Records[i].Kinesis.SequenceNumber})
		}
	}
	h.report(ctx, "kinesis", accepted, rejected, failed, st, start)
	return resp, nil
}

// splitRecord splits a record's data into its events, one or a JSON array,
// or says why the record is refused whole. Replay reads quarantined records
// with it too (reingest.go), so that both apply the same rules.
func splitRecord(data []byte) (raws []json.RawMessage, array bool, reason string) {
	raws, array, err := cloudevent.Split(data)
	switch {
	case err != nil:
		return nil, array, err.Error()
	case len(raws) == 0:
		return nil, array, "record: holds an empty array, no events"
	case len(raws) > MaxRequestEvents:
		// One record must not fan out into unbounded writes.
		return nil, array, fmt.Sprintf("record: holds %d events; at most %d per record", len(raws), MaxRequestEvents)
	}
	return raws, array, ""
}

// shardID takes the shard from a Kinesis event ID,
// "shardId-000000000000:4954...".
func shardID(eventID string) string {
	if i := strings.IndexByte(eventID, ':'); i >= 0 {
		return eventID[:i]
	}
	return eventID
}
