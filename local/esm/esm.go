// Package esm drives a Kinesis handler the way Lambda's event source mapping
// does: batches in sequence order, a retry from the lowest reported
// failure, bisection on function errors, and a retry limit and a record age
// after which records are given up on and go to the on-failure destination.
// Tests drive in-memory batches with it; the local poller (kinesispoll)
// drives the batches it reads from a Kinesis API.
package esm

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/shardline/shardline/ops/onfailure"
)

// Handler is a Kinesis handler with partial batch responses.
type Handler func(context.Context, events.KinesisEvent) (events.KinesisEventResponse, error)

// Driver feeds one shard's records to a Handler.
type Driver struct {
	Handler   Handler
	BatchSize int           // records per invocation
	Timeout   time.Duration // each invocation's deadline
	// RetryAttempts is how often a batch is retried before its records
	// are given up on; -1 retries without limit (Lambda's default), 0 not
	// at all.
	RetryAttempts int
	Bisect        bool // split a batch in two when the function errs
	// MaxRecordAge gives up on records that arrived longer ago than this,
	// before invoking the function with them; 0 has no limit.
	MaxRecordAge time.Duration
	// OnGiveUp, when set, is told of each run of records given up on, as
	// Lambda tells the on-failure destination.
	OnGiveUp func(context.Context, GiveUp)
	// Now is the clock of MaxRecordAge; default time.Now.
	Now func() time.Time
}

// GiveUp is a run of consecutive records the driver gave up on, and why.
type GiveUp struct {
	Records       []events.KinesisEventRecord
	Condition     string // onfailure.RetryAttemptsExhausted or onfailure.RecordAgeExceeded
	Invocations   int    // invocations that carried these records
	FunctionError bool   // the last of them failed, rather than reporting items
}

// Result says what the driver did.
type Result struct {
	Invocations int
	Errors      int                         // invocations that failed as a whole
	Retries     int                         // invocations that resent records
	Failed      []events.KinesisEventRecord // sent to the on-failure destination
}

// Run feeds records, in order, until each was processed or given up on.
func (d *Driver) Run(ctx context.Context, records []events.KinesisEventRecord) Result {
	var r Result
	for pos := 0; pos < len(records) && ctx.Err() == nil; pos += d.BatchSize {
		d.process(ctx, records[pos:min(pos+d.BatchSize, len(records))], d.RetryAttempts, &r)
	}
	return r
}

// Process feeds one batch, retrying and bisecting it, until each of its
// records was processed or given up on.
func (d *Driver) Process(ctx context.Context, batch []events.KinesisEventRecord) Result {
	var r Result
	d.process(ctx, batch, d.RetryAttempts, &r)
	return r
}

// process runs batch with retries left (-1: without limit).
func (d *Driver) process(ctx context.Context, batch []events.KinesisEventRecord, retries int, r *Result) {
	for attempt := 0; ; attempt++ {
		if batch = d.dropExpired(ctx, batch, attempt, r); len(batch) == 0 {
			return
		}
		if attempt > 0 {
			r.Retries++
		}
		resp, err := d.invoke(ctx, batch)
		r.Invocations++
		exhausted := retries >= 0 && attempt >= retries || ctx.Err() != nil
		if err != nil {
			r.Errors++
			if d.Bisect && len(batch) > 1 && ctx.Err() == nil {
				// Splitting does not use up the retry quota.
				left := retries
				if retries >= 0 {
					left = max(retries-attempt, 0)
				}
				half := len(batch) / 2
				d.process(ctx, batch[:half], left, r)
				d.process(ctx, batch[half:], left, r)
				return
			}
			if exhausted {
				d.giveUp(ctx, GiveUp{Records: batch, Condition: onfailure.RetryAttemptsExhausted, Invocations: attempt + 1, FunctionError: true}, r)
				return
			}
			continue
		}
		if len(resp.BatchItemFailures) == 0 {
			return
		}
		batch = batch[lowestFailure(batch, resp.BatchItemFailures):]
		if exhausted {
			d.giveUp(ctx, GiveUp{Records: batch, Condition: onfailure.RetryAttemptsExhausted, Invocations: attempt + 1}, r)
			return
		}
	}
}

// lowestFailure is where Lambda resumes a batch: at the lowest reported
// record. An identifier that names no record of the batch makes it retry
// the whole batch.
func lowestFailure(batch []events.KinesisEventRecord, failures []events.KinesisBatchItemFailure) int {
	lowest := len(batch)
	for _, f := range failures {
		found := false
		for i, rec := range batch {
			if rec.Kinesis.SequenceNumber == f.ItemIdentifier {
				lowest, found = min(lowest, i), true
			}
		}
		if !found {
			return 0
		}
	}
	return lowest
}

// dropExpired gives up on the records at the head of batch that are older
// than MaxRecordAge (records are in arrival order) and returns the rest.
func (d *Driver) dropExpired(ctx context.Context, batch []events.KinesisEventRecord, attempt int, r *Result) []events.KinesisEventRecord {
	if d.MaxRecordAge <= 0 {
		return batch
	}
	now := time.Now
	if d.Now != nil {
		now = d.Now
	}
	cutoff := now().Add(-d.MaxRecordAge)
	n := 0
	for n < len(batch) && batch[n].Kinesis.ApproximateArrivalTimestamp.Before(cutoff) {
		n++
	}
	if n > 0 {
		d.giveUp(ctx, GiveUp{Records: batch[:n], Condition: onfailure.RecordAgeExceeded, Invocations: attempt}, r)
	}
	return batch[n:]
}

func (d *Driver) giveUp(ctx context.Context, g GiveUp, r *Result) {
	r.Failed = append(r.Failed, g.Records...)
	if d.OnGiveUp != nil {
		d.OnGiveUp(ctx, g)
	}
}

// invoke calls the handler with a Lambda-like deadline, turning a panic into
// the function error Lambda would see.
func (d *Driver) invoke(ctx context.Context, batch []events.KinesisEventRecord) (resp events.KinesisEventResponse, err error) {
	ctx, cancel := context.WithTimeout(ctx, d.Timeout)
	defer cancel()
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("function panicked: %v", p)
		}
	}()
	return d.Handler(ctx, events.KinesisEvent{Records: append([]events.KinesisEventRecord(nil), batch...)})
}
