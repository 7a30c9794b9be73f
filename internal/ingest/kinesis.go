package ingest

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/shardline/shardline/internal/deadline"
	"github.com/shardline/shardline/internal/item"
	"github.com/shardline/shardline/internal/tenant"
)

// Kinesis ingests a batch of Kinesis records. Each record's data is one
// CloudEvent or a JSON array of them, or a KPL aggregate whose sub-records
// are each read as such a record. Events without a time get the record's
// approximate arrival time, which is the same on every retry, so a retried
// record lands on the same items.
//
// A record (or sub-record) holds at most MaxRequestEvents events, like an
// API request; a longer array is quarantined whole. An aggregate fans out
// into at most MaxAggregateEvents; a corrupt or larger one is quarantined
// whole with a reason beginning "kpl: ", and a refused sub-record with its
// sub_index in the origin.
//
// The response lists, by sequence number, the records that could not be
// stored for now (throttling, an unavailable table, the deadline, or a
// source's first-of-day setup that did not finish in its share of the time,
// setupShare): Lambda sends them again. An aggregate is listed once if any of its sub-records'
// events was not stored, since they share its sequence number. Records that
// are not valid events are quarantined and not listed: they are stored, and
// sending them again would not help.
//
// Lambda delivers a failed record again with every record after it; the
// records this container stored after it are not written again
// (redeliveries).
func (h *Handler) Kinesis(ctx context.Context, ev events.KinesisEvent) (events.KinesisEventResponse, error) {
	start := h.now()
	ctx, cancel := deadline.Budget(ctx)
	defer cancel()
	units, refused := h.kinesisUnits(ev.Records, h.now())
	h.reportStreamRefusals(ctx, ev.Records, refused)
	known, alreadyStored := h.redelivered.known(ev.Records, start)
	if alreadyStored > 0 {
		for n := range units {
			units[n].known = known[units[n].group]
		}
	}
	outcomes, st := h.store(ctx, units, true)
	st.alreadyStored = alreadyStored
	done := make([]bool, len(ev.Records))
	for i := range done {
		done[i] = true
	}
	var accepted, rejected, failed int
	for n, u := range units {
		switch {
		case u.known:
		case outcomes[n] == stored:
			accepted++
		case outcomes[n] == quarantined:
			rejected++
		default:
			failed++
			done[u.group] = false
		}
	}
	resp := events.KinesisEventResponse{BatchItemFailures: []events.KinesisBatchItemFailure{}}
	for i, ok := range done {
		if !ok {
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.KinesisBatchItemFailure{ItemIdentifier: ev.Records[i].Kinesis.SequenceNumber})
		}
	}
	if failed > 0 || alreadyStored > 0 {
		h.redelivered.remember(ev.Records, done, h.now())
	}
	h.report(ctx, "kinesis", accepted, rejected, failed, st, start)
	return resp, nil
}

// kinesisUnits reads the records into units to store (reader.read), each
// unit's group the index of its record: its events, and what must be
// quarantined. A record read from a tenant's own stream
// (tenant.Config.StreamOwner) is the tenant's: its origin names the
// tenant, and an event of it whose source is not the tenant's is
// quarantined with a reason beginning tenant.ReasonPrefix, never stored.
// refused counts those events.
func (h *Handler) kinesisUnits(recs []events.KinesisEventRecord, now time.Time) (units []unit, refused int) {
	units = make([]unit, 0, len(recs))
	r := h.newReader(now, len(recs), true) // one allocation for the usual one event a record
	for i, rec := range recs {
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
		origin.Tenant, _ = h.cfg.Tenants.StreamOwner(rec.EventSourceArn)
		units = r.read(units, &record{data: rec.Kinesis.Data, origin: origin, received: arrival, group: i, kpl: true})
	}
	return units, r.refused
}

// reportStreamRefusals reports the events of a tenant's stream that were
// not the tenant's, once for the batch (Lambda reads one stream a
// batch): a stream's record names no caller, so the log names the
// stream.
func (h *Handler) reportStreamRefusals(ctx context.Context, recs []events.KinesisEventRecord, refused int) {
	if refused == 0 {
		return
	}
	arn := recs[0].EventSourceArn
	owner, _ := h.cfg.Tenants.StreamOwner(arn)
	tenant.Report(ctx, h.log, h.metrics, h.now(), tenant.Refusal{Tenant: owner, Route: arn, Count: refused,
		Reason: fmt.Sprintf("%d events on tenant %s's own stream are not the tenant's: quarantined with reasons beginning %q", refused, owner, tenant.ReasonPrefix)})
}

// shardID takes the shard from a Kinesis event ID,
// "shardId-000000000000:4954...".
func shardID(eventID string) string {
	if i := strings.IndexByte(eventID, ':'); i >= 0 {
		return eventID[:i]
	}
	return eventID
}
