// Package esm drives a Kinesis handler the way Lambda's event source mapping
// does, for tests: batches in sequence order, a retry from the lowest
// reported failure, bisection on function errors, and a retry limit after
// which records go to the on-failure destination.
package esm

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

// Handler is a Kinesis handler with partial batch responses.
type Handler func(context.Context, events.KinesisEvent) (events.KinesisEventResponse, error)

// Driver feeds one shard's records to a Handler.
type Driver struct {
	Handler       Handler
	BatchSize     int           // records per invocation
	Timeout       time.Duration // each invocation's deadline
	RetryAttempts int           // retries of a batch before its records are given up on
	Bisect        bool          // split a batch in two when the function errs
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

func (d *Driver) process(ctx context.Context, batch []events.KinesisEventRecord, retries int, r *Result) {
	for attempt := 0; ; attempt++ {
		if attempt > 0 {
			r.Retries++
		}
		resp, err := d.invoke(ctx, batch)
		r.Invocations++
		if err != nil {
			r.Errors++
			if d.Bisect && len(batch) > 1 {
				half := len(batch) / 2
				d.process(ctx, batch[:half], retries-attempt, r)
				d.process(ctx, batch[half:], retries-attempt, r)
				return
			}
			if attempt >= retries || ctx.Err() != nil {
				r.Failed = append(r.Failed, batch...)
				return
			}
			continue
		}
		if len(resp.BatchItemFailures) == 0 {
			return
		}
		// Resume from the lowest reported record; an identifier that names
		// no record of the batch makes Lambda retry the whole batch.
		lowest := len(batch)
		for _, f := range resp.BatchItemFailures {
			found := false
			for i, rec := range batch {
				if rec.Kinesis.SequenceNumber == f.ItemIdentifier {
					lowest, found = min(lowest, i), true
				}
			}
			if !found {
				lowest = 0
			}
		}
		batch = batch[lowest:]
		if attempt >= retries || ctx.Err() != nil {
			r.Failed = append(r.Failed, batch...)
			return
		}
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
