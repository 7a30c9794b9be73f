package benchrun

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/shardline/shardline/internal/counts"
	"github.com/shardline/shardline/internal/ingest"
	"github.com/shardline/shardline/internal/item"
	"github.com/shardline/shardline/internal/schema"
	"github.com/shardline/shardline/local/ddbstreams"
	"github.com/shardline/shardline/ops/sourcecounter"
)

// CountsWriteRow is what the counter wrote for one part of the busy
// source's hour, with its events on StreamShards stream shards.
type CountsWriteRow struct {
	StreamShards    int     `json:"stream_shards"`
	Part            string  `json:"part"`
	Events          int     `json:"events"`
	Invocations     int     `json:"invocations"`
	Updates         int     `json:"updates"`
	Reads           int     `json:"reads"`
	WCU             int     `json:"wcu_priced"`
	ReportedWCU     float64 `json:"wcu_reported_by_dynamodb_local"`
	UpdatesPerEvent float64 `json:"updates_per_event"`
	WCUPerEvent     float64 `json:"wcu_per_event"`
}

// The parts of the hour.
const (
	partPrefill = "earlier minutes (simulated stream records)"
	partIngest  = "last minutes (real ingest, DynamoDB Local's stream)"
	partHour    = "the hour"
)

// ingested is the busy source's measured minutes as the counter's mapping
// sees them on the table's stream.
type ingested struct {
	shardID     string // DynamoDB Local's one stream shard
	shards      int    // the stream's shards
	recs        []streamed
	recordBytes int // a record's mean size as JSON in an invocation
}

// streamed is a record of DynamoDB Local's stream with its event's write
// shard.
type streamed struct {
	arrival
	writeShard int
}

// ingestMeasured writes the last o.Measured of the busy source's hour
// through the real ingest handler into a fresh table on the DynamoDB Local
// at endpoint, and reads the records back from the table's stream.
func ingestMeasured(ctx context.Context, client *dynamodb.Client, endpoint string, o CountsOptions, hourEnd time.Time) (ingested, error) {
	var in ingested
	if err := schema.Create(ctx, client, countsEventsTable); err != nil {
		return in, err
	}
	n, err := ingestBusy(ctx, client, countsEventsTable, o, hourEnd.Add(-o.Measured))
	if err != nil {
		return in, err
	}
	if in.shardID, in.shards, in.recs, err = readStream(ctx, client, endpoint, countsEventsTable); err != nil {
		return in, err
	}
	if len(in.recs) != n {
		return in, fmt.Errorf("the stream holds %d inserted events; %d were sent", len(in.recs), n)
	}
	for _, r := range in.recs {
		in.recordBytes += r.bytes
	}
	in.recordBytes /= max(1, len(in.recs))
	return in, nil
}

// measureWrites prices the counter over one hour of the busy source: its
// last o.Measured, ingested; the o.Prefill before it, in the same hour,
// made as simulated stream records, so that the counter item has the size
// it has late in a busy hour. Both are cut into invocations as the stack's
// mapping cuts them, for one stream shard and for four.
func measureWrites(ctx context.Context, client *dynamodb.Client, o CountsOptions, hourEnd time.Time, in ingested) ([]CountsWriteRow, error) {
	var out []CountsWriteRow
	for _, s := range []int{1, 4} {
		rows, err := countHour(ctx, client, o, s, hourEnd, in)
		if err != nil {
			return nil, fmt.Errorf("%d stream shards: %w", s, err)
		}
		out = append(out, rows...)
	}
	return out, nil
}

// ingestBusy writes o.Measured of the busy source from from through the
// real ingest handler, one Kinesis invocation a second of events (what the
// ingest mapping's 1 s batching window makes of them), one after another.
func ingestBusy(ctx context.Context, client *dynamodb.Client, table string, o CountsOptions, from time.Time) (int, error) {
	to := from.Add(o.Measured)
	h := ingest.New(ingest.DefaultConfig(table), client, ingest.Options{Now: func() time.Time { return to }})
	rng := rand.New(rand.NewPCG(10, 2))
	typs := eventTypes(o.Types)
	step := time.Second / time.Duration(o.Rate)
	n := int(o.Measured/time.Second) * o.Rate
	var ev events.KinesisEvent
	for i := range n {
		at := from.Add(time.Duration(i) * step)
		seq := strconv.Itoa(1_000_000 + i)
		data := telemetry(fmt.Sprintf("busy-%08d", i), busySource, typs[rng.IntN(len(typs))], i, at)
		ev.Records = append(ev.Records, events.KinesisEventRecord{EventSource: "aws:kinesis", EventID: "shardId-0:" + seq,
			Kinesis: events.KinesisRecord{Data: data, SequenceNumber: seq, ApproximateArrivalTimestamp: events.SecondsEpochTime{Time: at}}})
		if len(ev.Records) < o.Rate && i < n-1 {
			continue
		}
		resp, err := h.Kinesis(ctx, ev)
		if err != nil {
			return 0, fmt.Errorf("ingest the busy source: %w", err)
		}
		if len(resp.BatchItemFailures) > 0 {
			return 0, fmt.Errorf("ingest the busy source: %d records failed", len(resp.BatchItemFailures))
		}
		ev.Records = nil
	}
	return n, nil
}

// readStream reads the table's stream from DynamoDB Local and keeps what
// the mapping's filter passes (inserted events), in stream order, each
// with its event's time and its size as JSON in an invocation. DynamoDB
// Local gives a table's stream one shard.
func readStream(ctx context.Context, client *dynamodb.Client, endpoint, table string) (string, int, []streamed, error) {
	arn, err := ddbstreams.StreamARN(ctx, client, table)
	if err != nil {
		return "", 0, nil, err
	}
	byShard, err := ddbstreams.Read(ctx, ddbstreams.Static(endpoint), arn)
	if err != nil {
		return "", 0, nil, fmt.Errorf("read the stream of %s: %w", table, err)
	}
	if len(byShard) != 1 {
		return "", 0, nil, fmt.Errorf("the stream of %s has %d shards; the bench splits one shard's records itself", table, len(byShard))
	}
	var shardID string
	var out []streamed
	for id, recs := range byShard {
		shardID = id
		for _, r := range recs {
			if !item.IsEventChange(r, "INSERT") {
				continue
			}
			ev, err := item.ChangedEvent(r)
			if err != nil {
				return "", 0, nil, err
			}
			b, err := json.Marshal(r)
			if err != nil {
				return "", 0, nil, fmt.Errorf("stream record %s: %w", r.EventID, err)
			}
			out = append(out, streamed{arrival: arrival{rec: r, at: ev.Time, bytes: len(b)}, writeShard: ev.Shard})
		}
	}
	return shardID, len(byShard), out, nil
}

// countHour counts the busy source's hour into a fresh table with its
// events on s stream shards: the simulated earlier minutes, then the
// ingested ones, each cut into the mapping's invocations, which run one
// after another in the order of their start (the meter prices them from
// the item's size around each update). It checks the hour's count.
func countHour(ctx context.Context, client *dynamodb.Client, o CountsOptions, s int, hourEnd time.Time, in ingested) ([]CountsWriteRow, error) {
	table := fmt.Sprintf(countsCounterTables, s)
	if err := schema.Create(ctx, client, table); err != nil {
		return nil, err
	}
	m := &meter{c: client}
	c := &sourcecounter.Counter{Client: m, Table: table, Retention: counts.DefaultRetentionDays * 24 * time.Hour}
	measuredFrom := hourEnd.Add(-o.Measured)
	prefilled, pre := prefillBatches(o, s, measuredFrom.Add(-o.Prefill), measuredFrom, in.recordBytes)
	if err := apply(ctx, c, pre); err != nil {
		return nil, err
	}
	before := m.usage()
	ingested := ingestedBatches(in, s)
	if err := apply(ctx, c, ingested); err != nil {
		return nil, err
	}
	total := m.usage()
	if err := checkCount(ctx, client, table, busySource, hourEnd.Add(-time.Hour), hourEnd, int64(prefilled+len(in.recs))); err != nil {
		return nil, err
	}
	return []CountsWriteRow{
		writeRow(s, partPrefill, prefilled, len(pre), before),
		writeRow(s, partIngest, len(in.recs), len(ingested), total.minus(before)),
		writeRow(s, partHour, prefilled+len(in.recs), len(pre)+len(ingested), total),
	}, nil
}

// prefillBatches are the invocations of the simulated minutes from from to
// to, on s stream shards of their own: their watermarks add a few bytes to
// the item, which makes the figures a bound.
func prefillBatches(o CountsOptions, s int, from, to time.Time, recordBytes int) (int, []batch) {
	sim := newSimSource(busySource, eventTypes(o.Types), uint64(s))
	var shards [][]batch
	n := 0
	for k, recs := range sim.arrivals(from, to, o.Rate, s, recordBytes) {
		shards = append(shards, stackMapping.batches(fmt.Sprintf("prefill-%d", k), recs))
		n += len(recs)
	}
	return n, interleave(shards...)
}

// ingestedBatches are the invocations of the ingested records on s stream
// shards: DynamoDB Local's one, or that one's records split by their write
// shard.
func ingestedBatches(in ingested, s int) []batch {
	split := make([][]arrival, s)
	for _, r := range in.recs {
		split[r.writeShard%s] = append(split[r.writeShard%s], r.arrival)
	}
	var shards [][]batch
	for k, recs := range split {
		id := in.shardID
		if s > 1 {
			id = fmt.Sprintf("%s-%d", in.shardID, k)
		}
		shards = append(shards, stackMapping.batches(id, recs))
	}
	return interleave(shards...)
}

func writeRow(shards int, part string, n, invocations int, u usage) CountsWriteRow {
	return CountsWriteRow{StreamShards: shards, Part: part, Events: n, Invocations: invocations, Updates: u.Updates, Reads: u.Reads,
		WCU: u.Priced, ReportedWCU: u.Reported, UpdatesPerEvent: float64(u.Updates) / float64(n), WCUPerEvent: float64(u.Priced) / float64(n)}
}

// apply delivers the invocations to the counter, one after another.
func apply(ctx context.Context, c *sourcecounter.Counter, bs []batch) error {
	for _, b := range bs {
		if err := deliver(ctx, c, b); err != nil {
			return err
		}
	}
	return nil
}

// deliverAttempts bounds how often one invocation is delivered.
const deliverAttempts = 10

// deliver invokes the counter with b until it succeeds, as the mapping
// does (a delivery again counts nothing twice). On DynamoDB Local an
// update can time out waiting for the table's lock when the machine is
// busy; the retries cost requests, which the figures then include.
func deliver(ctx context.Context, c *sourcecounter.Counter, b batch) error {
	var err error
	for attempt := range deliverAttempts {
		if _, err = c.Apply(ctx, b.shard, b.recs); err == nil || ctx.Err() != nil {
			break
		}
		time.Sleep(time.Duration(attempt+1) * 100 * time.Millisecond)
	}
	if err != nil {
		return fmt.Errorf("counter, shard %s, %d records: %w", b.shard, len(b.recs), err)
	}
	return nil
}

// checkCount fails unless the counts of source from from to to add up to
// want: a bench of a counter that miscounts measures nothing.
func checkCount(ctx context.Context, client *dynamodb.Client, table, source string, from, to time.Time, want int64) error {
	resp, err := counts.ReadLevels(ctx, client, table, counts.DefaultBuckets, counts.Request{Source: source, From: from, To: to, Interval: to.Sub(from), Name: "all"})
	if err != nil {
		return err
	}
	var got int64
	for _, s := range resp.Series {
		for _, p := range s.Points {
			got += p.Count
		}
	}
	if got != want {
		return fmt.Errorf("the counter counted %d events of %s from %s to %s; %d were sent", got, source, from.Format(time.RFC3339), to.Format(time.RFC3339), want)
	}
	return nil
}
