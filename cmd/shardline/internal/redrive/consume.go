package redrive

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/shardline/shardline/internal/backoff"
	"github.com/shardline/shardline/internal/counts"
	"github.com/shardline/shardline/ops/onfailure"
	"github.com/shardline/shardline/ops/sourcecounter"
)

// batch is an object's records, of one kind of stream.
type batch struct {
	kinesis []events.KinesisEventRecord
	stream  []events.DynamoDBEventRecord
}

func (b batch) size() int { return len(b.kinesis) + len(b.stream) }

// records decodes rec's records, which must agree with its batch info.
func records(rec onfailure.Record) (batch, error) {
	var b batch
	var err error
	if rec.Source() == onfailure.Kinesis {
		b.kinesis, err = rec.Kinesis()
	} else {
		b.stream, err = rec.DynamoDB()
	}
	switch {
	case err != nil:
		return b, err
	case b.size() == 0:
		return b, errors.New("the record's payload holds no records")
	case b.size() != rec.Batch().BatchSize:
		return b, fmt.Errorf("the payload holds %d records, the batch info says %d", b.size(), rec.Batch().BatchSize)
	}
	return b, nil
}

// process runs b through consumer c (an ingest batch through h) and
// returns how many records it processed; an error leaves the object.
func (r *Redriver) process(ctx context.Context, o Options, c Consumer, shardID string, b batch, h KinesisHandler) (int, error) {
	switch {
	case c == Ingest && h != nil:
		return ingestWith(ctx, o, h, b.kinesis)
	case c == Counter && r.Chain != nil && r.Counter != nil:
		return retry(ctx, o, func(ctx context.Context) (int, error) {
			st, err := r.countAgain(ctx, shardID, b.stream)
			return st.Counted + st.Already + st.Skipped, err
		})
	case c == Archive && r.Archive != nil:
		// The whole batch at once: the archive names its objects after the
		// batch's first record, so it rewrites what the failed attempts
		// wrote instead of adding copies.
		return retry(ctx, o, func(ctx context.Context) (int, error) {
			st, err := r.Archive.Archive(ctx, b.stream)
			return st.Records, err
		})
	}
	return 0, fmt.Errorf("this run has no %s code to run (a redrive without it leaves these batches)", c)
}

// countAgain counts what a given-up counter batch left uncounted: by its
// shard's L0 chain (counts.Chain.Redrive), or, for a batch given up before
// the chain began (under the per-source counter of earlier releases), by
// that counter's notes and watermarks (sourcecounter.Counter.Redrive).
func (r *Redriver) countAgain(ctx context.Context, shardID string, recs []events.DynamoDBEventRecord) (counts.RedriveStats, error) {
	st, err := r.Chain.Redrive(ctx, shardID, recs)
	if errors.Is(err, counts.ErrBeforeChain) {
		return r.Counter.Redrive(ctx, shardID, recs)
	}
	return st, err
}

// retry runs f, each time with an invocation's deadline, until it
// succeeds, fails in a way a retry cannot mend, or the attempts are spent.
func retry(ctx context.Context, o Options, f func(context.Context) (int, error)) (int, error) {
	var err error
	for attempt := 0; attempt < o.Attempts; attempt++ {
		if attempt > 0 {
			if serr := backoff.Sleep(ctx, pauses.Ceiling(attempt)); serr != nil {
				return 0, serr
			}
		}
		var n int
		n, err = invoke(ctx, o, f)
		var amb *sourcecounter.AmbiguousError
		if err == nil || ctx.Err() != nil || errors.As(err, &amb) {
			return n, err
		}
	}
	return 0, fmt.Errorf("after %d attempts: %w; the object stays for a later run", o.Attempts, err)
}

// invoke calls f as Lambda would: with a deadline, a panic turned into an
// error.
func invoke(ctx context.Context, o Options, f func(context.Context) (int, error)) (n int, err error) {
	ctx, cancel := context.WithTimeout(ctx, o.InvokeTimeout)
	defer cancel()
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v", p)
		}
	}()
	return f(ctx)
}

// pauses space the attempts: 100 ms, doubling, at most 5 s, without jitter
// (one redrive works alone).
var pauses = backoff.Policy{Base: 100 * time.Millisecond, Max: 5 * time.Second}
