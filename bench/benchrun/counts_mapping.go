package benchrun

import (
	"sort"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

// mapping is how the stack's event source mapping batches one stream
// shard's records for the counter function (infra/shardline/counter.go):
// a batch closes when its batching window has passed since its first
// record, at the end of a tumbling window (a batch never spans two), at
// MaxRecords, or when the next record would take the invocation past
// Lambda's 6 MB payload.
type mapping struct {
	Window     time.Duration // MaximumBatchingWindowInSeconds
	Tumbling   time.Duration // TumblingWindowInSeconds
	MaxRecords int           // BatchSize
	MaxBytes   int           // the synchronous invocation payload limit
}

// stackMapping mirrors the constants of infra/shardline/counter.go
// (CounterBatchingWindow, CounterTumblingWindow, CounterBatchSize), which
// this package does not import: the CDK libraries do not belong in the
// command line.
var stackMapping = mapping{Window: 10 * time.Second, Tumbling: 15 * time.Second, MaxRecords: 10000, MaxBytes: 6 << 20}

// arrival is a stream record and when it reached the stream. The bench
// writes minutes of events in seconds, so a record's
// ApproximateCreationDateTime says nothing about the rate; the time the
// simulated producer sent the event (its `time`, as it sends in real
// time) stands in for it.
type arrival struct {
	rec   events.DynamoDBEventRecord
	at    time.Time
	bytes int // the record's size in the invocation payload
}

// batch is one invocation of the counter function.
type batch struct {
	shard string
	start time.Time
	recs  []events.DynamoDBEventRecord
}

// batches cuts one shard's records, in stream order, into the invocations
// the mapping makes of them.
func (m mapping) batches(shard string, recs []arrival) []batch {
	var out []batch
	var cur batch
	var bytes int
	var windowEnd, last time.Time
	for _, a := range recs {
		if len(cur.recs) > 0 && (!a.at.Before(cur.start.Add(m.Window)) || !a.at.Before(windowEnd) ||
			len(cur.recs) == m.MaxRecords || bytes+a.bytes > m.MaxBytes) {
			out = append(out, cur)
			cur = batch{}
		}
		if len(cur.recs) == 0 {
			// A batch starts no earlier than the one before it, so that
			// interleave keeps a shard's batches in stream order.
			last = later(last, a.at)
			cur = batch{shard: shard, start: last}
			bytes = 0
			windowEnd = last.Truncate(m.Tumbling).Add(m.Tumbling)
		}
		cur.recs = append(cur.recs, a.rec)
		bytes += a.bytes
	}
	if len(cur.recs) > 0 {
		out = append(out, cur)
	}
	return out
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// interleave orders the batches of several shards by their start, as the
// mapping invokes them over time; a shard's own batches keep their order.
func interleave(shards ...[]batch) []batch {
	var all []batch
	for _, s := range shards {
		all = append(all, s...)
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].start.Before(all[j].start) })
	return all
}
