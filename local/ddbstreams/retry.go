package ddbstreams

import (
	"context"
	"log/slog"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/shardline/shardline/internal/backoff"
	"github.com/shardline/shardline/ops/onfailure"
)

// Destination receives the on-failure record of each batch given up on.
type Destination func(context.Context, onfailure.Record) error

// Retry is how the stack's event source mapping treats a failing batch of
// the table's stream: MaximumRetryAttempts, BisectBatchOnFunctionError,
// MaximumRecordAgeInSeconds and an on-failure destination.
type Retry struct {
	// RetryAttempts is how often a batch is retried before it is given up
	// on; 0 gives it up after the first failure (bisection aside).
	RetryAttempts int
	Bisect        bool          // split a batch in two when the function errs
	MaxRecordAge  time.Duration // give up on records older than this; 0 has no limit
	// OnFailure receives what is given up on; nil logs and drops it.
	OnFailure Destination
	// FunctionARN names the function in on-failure records.
	FunctionARN string
	// Now is the clock of MaxRecordAge; default time.Now.
	Now func() time.Time
}

// process runs batch with retries left, bisecting it on errors when asked
// (splitting does not use up the retries, as with Lambda), until each of
// its records succeeded or was given up on, or ctx ended.
func (r *Retry) process(ctx context.Context, p *Poller, shardID string, batch []events.DynamoDBEventRecord, retries int) {
	for attempt := 0; ctx.Err() == nil; attempt++ {
		if batch = r.dropExpired(ctx, p, shardID, batch, attempt); len(batch) == 0 {
			return
		}
		if attempt > 0 {
			backoff.Sleep(ctx, retryPause(attempt-1))
		}
		err := p.invoke(ctx, shardID, batch)
		if err == nil || ctx.Err() != nil {
			return
		}
		p.Log.Warn("stream batch failed", slog.String("shard", shardID), slog.Int("records", len(batch)),
			slog.Int("attempt", attempt+1), slog.String("error", err.Error()))
		if r.Bisect && len(batch) > 1 {
			left := max(retries-attempt, 0)
			half := len(batch) / 2
			r.process(ctx, p, shardID, batch[:half], left)
			r.process(ctx, p, shardID, batch[half:], left)
			return
		}
		if attempt >= retries {
			r.giveUp(ctx, p, shardID, batch, onfailure.RetryAttemptsExhausted, attempt+1)
			return
		}
	}
}

// dropExpired gives up on the records at the head of batch that are older
// than MaxRecordAge (a shard's records are in creation order) and returns
// the rest.
func (r *Retry) dropExpired(ctx context.Context, p *Poller, shardID string, batch []events.DynamoDBEventRecord, attempt int) []events.DynamoDBEventRecord {
	if r.MaxRecordAge <= 0 {
		return batch
	}
	now := time.Now
	if r.Now != nil {
		now = r.Now
	}
	cutoff := now().Add(-r.MaxRecordAge)
	n := 0
	for n < len(batch) && batch[n].Change.ApproximateCreationDateTime.Before(cutoff) {
		n++
	}
	if n > 0 {
		r.giveUp(ctx, p, shardID, batch[:n], onfailure.RecordAgeExceeded, attempt)
	}
	return batch[n:]
}

// giveUp sends the on-failure record of batch to the destination, trying a
// few times as Lambda does; the batch counts as done either way.
func (r *Retry) giveUp(ctx context.Context, p *Poller, shardID string, batch []events.DynamoDBEventRecord, condition string, invocations int) {
	if ctx.Err() != nil {
		return // stopping, not giving up: the batch is not done
	}
	p.givenUp.Add(int64(len(batch)))
	log := p.Log.With(slog.String("shard", shardID), slog.String("condition", condition), slog.Int("records", len(batch)),
		slog.String("start_sequence_number", batch[0].Change.SequenceNumber),
		slog.String("end_sequence_number", batch[len(batch)-1].Change.SequenceNumber))
	rec, err := onfailure.NewDynamoDB(onfailure.GiveUp{
		StreamARN: p.StreamARN, ShardID: shardID, Condition: condition, Invocations: invocations,
		FunctionError: invocations > 0, FunctionARN: r.FunctionARN, At: time.Now(),
	}, batch)
	if err != nil {
		log.Error("stream poller: gave up on a batch and could not write its on-failure record", slog.String("error", err.Error()))
		return
	}
	if r.OnFailure == nil {
		log.Error("stream poller: gave up on a batch; no on-failure destination, so only this log line tells of it")
		return
	}
	for attempt := range 3 {
		if err = r.OnFailure(ctx, rec); err == nil {
			p.delivered.Add(1)
			log.Warn("stream poller: gave up on a batch; its on-failure record, records included, went to the destination")
			return
		}
		backoff.Sleep(ctx, retryPause(attempt))
	}
	log.Error("stream poller: gave up on a batch and could not deliver its on-failure record", slog.String("error", err.Error()))
}
