package redrive

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/shardline/shardline/internal/backoff"
)

// work is the ingest of one message's records.
type work struct {
	r                    *Redriver
	o                    Options
	m                    types.Message
	extended, progressed time.Time
	res                  *Result
}

// ingest stores records in batches, each retried until the handler
// reports nothing failed or the attempts are spent.
func (w *work) ingest(ctx context.Context, records []events.KinesisEventRecord) error {
	for start := 0; start < len(records); start += w.o.BatchSize {
		batch := records[start:min(start+w.o.BatchSize, len(records))]
		if err := w.batch(ctx, batch); err != nil {
			return err
		}
		w.res.Stored += len(batch)
		if time.Since(w.progressed) >= w.o.ProgressEvery {
			w.progressed = time.Now()
			w.r.Log.Info("redrive progress", slog.String("message", w.res.MessageID),
				slog.Int("stored", w.res.Stored), slog.Int("records", len(records)))
		}
	}
	return nil
}

// batch invokes the handler until every record of batch is stored; after a
// partial failure only the reported records are sent again.
func (w *work) batch(ctx context.Context, batch []events.KinesisEventRecord) error {
	pending := batch
	var last error
	for attempt := 0; attempt < w.o.Attempts; attempt++ {
		if attempt > 0 {
			if err := backoff.Sleep(ctx, retries.Ceiling(attempt)); err != nil {
				return err
			}
		}
		if err := w.keepHidden(ctx); err != nil {
			return err
		}
		resp, err := w.invoke(ctx, pending)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil {
			last = fmt.Errorf("the ingest handler failed: %w", err)
			continue
		}
		if len(resp.BatchItemFailures) == 0 {
			return nil
		}
		pending = reported(pending, resp.BatchItemFailures)
		last = fmt.Errorf("%d records not stored for now (throttled or unavailable table, or the deadline)", len(pending))
	}
	return fmt.Errorf("after %d attempts: %w; the message stays on the queue for a later run", w.o.Attempts, last)
}

// reported keeps the records a response names; a name that matches no
// record keeps them all, as Lambda would.
func reported(batch []events.KinesisEventRecord, failures []events.KinesisBatchItemFailure) []events.KinesisEventRecord {
	want := map[string]bool{}
	for _, f := range failures {
		want[f.ItemIdentifier] = true
	}
	var out []events.KinesisEventRecord
	for _, r := range batch {
		if want[r.Kinesis.SequenceNumber] {
			out = append(out, r)
			delete(want, r.Kinesis.SequenceNumber)
		}
	}
	if len(want) > 0 {
		return batch
	}
	return out
}

// invoke calls the handler as Lambda would: with a deadline, a panic
// turned into an error.
func (w *work) invoke(ctx context.Context, batch []events.KinesisEventRecord) (resp events.KinesisEventResponse, err error) {
	ctx, cancel := context.WithTimeout(ctx, w.o.InvokeTimeout)
	defer cancel()
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v", p)
		}
	}()
	return w.r.Ingest(ctx, events.KinesisEvent{Records: append([]events.KinesisEventRecord(nil), batch...)})
}

// keepHidden extends the message's visibility once half of it is spent,
// so that no other reader takes it up while its records are stored.
func (w *work) keepHidden(ctx context.Context) error {
	if time.Since(w.extended) < w.o.Visibility/2 {
		return nil
	}
	if _, err := w.r.SQS.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{
		QueueUrl: aws.String(w.r.QueueURL), ReceiptHandle: w.m.ReceiptHandle, VisibilityTimeout: seconds(w.o.Visibility),
	}); err != nil {
		return fmt.Errorf("extend the message's visibility: %w", err)
	}
	w.extended = time.Now()
	return nil
}

// retries spaces the attempts at a batch: 100 ms, doubling, at most 5 s,
// without jitter (one redrive works alone).
var retries = backoff.Policy{Base: 100 * time.Millisecond, Max: 5 * time.Second}

// seconds is d in whole seconds for SQS, at least 0 and at most 12 hours.
func seconds(d time.Duration) int32 {
	return int32(min(max(d, 0), 12*time.Hour) / time.Second)
}
