// Package redrive re-ingests the Kinesis batches that Lambda gave up on. It
// receives the on-failure records from the SQS queue, reads each batch's
// records back from the stream (GetShardIterator AT_SEQUENCE_NUMBER, then
// GetRecords past the batch's last record), runs them through the ingest
// handler, retries what the handler reports, and deletes a message only
// once every record of its batch is stored. Ingest is idempotent, so a
// message redriven twice, or an interrupted run done again, stores nothing
// twice.
package redrive

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/shardline/shardline/internal/esm"
	"github.com/shardline/shardline/internal/kinesisread"
	"github.com/shardline/shardline/internal/onfailure"
)

// SQSAPI is the part of the SQS client redrive uses.
type SQSAPI interface {
	ReceiveMessage(context.Context, *sqs.ReceiveMessageInput, ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
	DeleteMessage(context.Context, *sqs.DeleteMessageInput, ...func(*sqs.Options)) (*sqs.DeleteMessageOutput, error)
	ChangeMessageVisibility(context.Context, *sqs.ChangeMessageVisibilityInput, ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityOutput, error)
}

// Redriver re-ingests what one on-failure queue points at.
type Redriver struct {
	SQS      SQSAPI
	QueueURL string
	Kinesis  kinesisread.API
	// Ingest is the ingest function's Kinesis handler
	// (ingest.Handler.Kinesis).
	Ingest esm.Handler
	Log    *slog.Logger // progress; default: discard
	// Now is the clock that tells whether the stream still keeps a
	// batch; default time.Now.
	Now func() time.Time
}

// Defaults of Options.
const (
	DefaultVisibility    = 5 * time.Minute
	DefaultWait          = 2 * time.Second
	DefaultAttempts      = 10
	DefaultBatchSize     = 500
	DefaultInvokeTimeout = 60 * time.Second
	DefaultProgressEvery = 10 * time.Second
)

// Options say what a run does.
type Options struct {
	// StreamARN, when set, redrives only that stream's batches; messages
	// of other streams are left on the queue.
	StreamARN string
	// DryRun reads every message and its records and reports; it writes
	// nothing and deletes nothing.
	DryRun bool
	// Max is the most messages to handle; 0 handles all.
	Max int
	// Visibility hides a received message from other readers while it is
	// worked on (it is extended as the work goes on); default 5 minutes.
	Visibility time.Duration
	// Wait is the long poll of a receive; the run ends at the first receive
	// that brings nothing new. Default 2 s.
	Wait time.Duration
	// Attempts is how often the handler is invoked with a record before
	// its message is left for a later run; default 10.
	Attempts int
	// BatchSize is the most records an invocation gets; default 500.
	BatchSize int
	// InvokeTimeout is an invocation's deadline; default 60 s, the ingest
	// function's timeout.
	InvokeTimeout time.Duration
	// ProgressEvery logs progress within a long batch this often; default
	// 10 s.
	ProgressEvery time.Duration
	// OnMessage, when set, is told of each message's outcome.
	OnMessage func(Result)
}

func (o *Options) defaults() {
	if o.Visibility <= 0 {
		o.Visibility = DefaultVisibility
	}
	switch {
	case o.Wait == 0:
		o.Wait = DefaultWait
	case o.Wait < 0:
		o.Wait = 0
	case o.Wait > 20*time.Second:
		o.Wait = 20 * time.Second // SQS's longest poll
	}
	if o.Attempts <= 0 {
		o.Attempts = DefaultAttempts
	}
	if o.BatchSize <= 0 {
		o.BatchSize = DefaultBatchSize
	}
	if o.InvokeTimeout <= 0 {
		o.InvokeTimeout = DefaultInvokeTimeout
	}
	if o.ProgressEvery <= 0 {
		o.ProgressEvery = DefaultProgressEvery
	}
}

// Outcome is what became of a message.
type Outcome string

// The outcomes.
const (
	// Redriven: every record is stored and the message deleted.
	Redriven Outcome = "redriven"
	// WouldRedrive: a dry run read the records; nothing was written.
	WouldRedrive Outcome = "would redrive"
	// Gone: the stream no longer holds the records (trimmed at its
	// retention, or the shard or stream is gone); the message is left.
	Gone Outcome = "gone"
	// Failed: the records could not be read or not all stored; the message
	// is left for a later run.
	Failed Outcome = "failed"
	// Invalid: the message is not a Kinesis on-failure record; it is left.
	Invalid Outcome = "invalid"
	// OtherStream: the batch is of another stream than Options.StreamARN;
	// the message is left.
	OtherStream Outcome = "other stream"
)

// Result is one message's outcome.
type Result struct {
	MessageID string
	Outcome   Outcome
	Batch     *onfailure.BatchInfo // nil when Invalid
	Condition string               // why Lambda gave up
	Records   int                  // records read back from the stream
	Stored    int                  // records stored (not in a dry run)
	Err       error                // why it was not redriven
}

// Summary counts a run's messages by outcome, and their records.
type Summary struct {
	Messages                                             int
	Redriven, WouldRedrive, Gone, Failed, Invalid, Other int
	Records, Stored                                      int
}

// NeedsAttention says whether a message was left for a reason a person
// must look at: records gone, not stored, or a message that is not an
// on-failure record.
func (s Summary) NeedsAttention() bool { return s.Gone+s.Failed+s.Invalid > 0 }

func (s *Summary) add(r Result) {
	s.Messages++
	s.Records += r.Records
	s.Stored += r.Stored
	switch r.Outcome {
	case Redriven:
		s.Redriven++
	case WouldRedrive:
		s.WouldRedrive++
	case Gone:
		s.Gone++
	case Failed:
		s.Failed++
	case Invalid:
		s.Invalid++
	case OtherStream:
		s.Other++
	}
}

// Run handles the queue's messages until a receive brings nothing new, Max
// messages are handled, or ctx ends (then it returns ctx's error). The
// messages it does not delete are made visible again before it returns, so
// that running it again, at once, takes them up.
func (r *Redriver) Run(ctx context.Context, o Options) (Summary, error) {
	o.defaults()
	if r.Log == nil {
		r.Log = slog.New(slog.DiscardHandler)
	}
	var sum Summary
	seen := map[string]bool{}
	var held []string // receipt handles of messages left on the queue
	defer func() { r.release(held) }()
	for ctx.Err() == nil && (o.Max == 0 || sum.Messages < o.Max) {
		want := 10
		if o.Max > 0 {
			want = min(want, o.Max-sum.Messages)
		}
		out, err := r.SQS.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(r.QueueURL), MaxNumberOfMessages: int32(want),
			VisibilityTimeout: seconds(o.Visibility), WaitTimeSeconds: seconds(o.Wait),
		})
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			return sum, fmt.Errorf("receive from %s: %w", r.QueueURL, err)
		}
		fresh := 0
		for _, m := range out.Messages {
			id := aws.ToString(m.MessageId)
			if seen[id] {
				continue // came back during this run: it was handled already
			}
			seen[id], fresh = true, fresh+1
			if ctx.Err() != nil {
				held = append(held, aws.ToString(m.ReceiptHandle)) // received, not begun
				continue
			}
			res := r.handle(ctx, o, m)
			if res.Outcome != Redriven {
				held = append(held, aws.ToString(m.ReceiptHandle))
			}
			if ctx.Err() != nil {
				continue // interrupted: this message is not done, whatever it got to
			}
			sum.add(res)
			if o.OnMessage != nil {
				o.OnMessage(res)
			}
		}
		if fresh == 0 {
			break
		}
	}
	return sum, ctx.Err()
}

// release makes the messages left on the queue visible again.
func (r *Redriver) release(handles []string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, h := range handles {
		if _, err := r.SQS.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{
			QueueUrl: aws.String(r.QueueURL), ReceiptHandle: aws.String(h), VisibilityTimeout: 0,
		}); err != nil {
			r.Log.Warn("could not make a message visible again; it comes back when its visibility timeout ends", slog.String("error", err.Error()))
		}
	}
}

// handle redrives one message.
func (r *Redriver) handle(ctx context.Context, o Options, m types.Message) Result {
	res := Result{MessageID: aws.ToString(m.MessageId)}
	rec, err := onfailure.Parse([]byte(aws.ToString(m.Body)))
	if err != nil {
		res.Outcome, res.Err = Invalid, err
		return res
	}
	b := rec.KinesisBatchInfo
	res.Batch, res.Condition = b, rec.RequestContext.Condition
	if o.StreamARN != "" && b.StreamARN != o.StreamARN {
		res.Outcome = OtherStream
		return res
	}
	stream, err := kinesisread.ParseARN(b.StreamARN)
	if err != nil {
		res.Outcome, res.Err = Invalid, fmt.Errorf("KinesisBatchInfo.streamArn: %w", err)
		return res
	}
	if err := r.kept(ctx, stream, b); err != nil {
		res.Outcome, res.Err = Failed, err
		var gone *kinesisread.GoneError
		if errors.As(err, &gone) {
			res.Outcome = Gone
		}
		return res
	}
	records, err := kinesisread.Range(ctx, r.Kinesis, stream, b.ShardID, b.StartSequenceNumber, b.EndSequenceNumber)
	res.Records = len(records)
	var gone *kinesisread.GoneError
	switch {
	case errors.As(err, &gone):
		res.Outcome, res.Err = Gone, err
		return res
	case err != nil:
		res.Outcome, res.Err = Failed, fmt.Errorf("read the batch back: %w", err)
		return res
	case o.DryRun:
		res.Outcome = WouldRedrive
		return res
	}
	w := &work{r: r, o: o, m: m, extended: time.Now(), progressed: time.Now(), res: &res}
	if err := w.ingest(ctx, records); err != nil {
		res.Outcome, res.Err = Failed, err
		return res
	}
	if _, err := r.SQS.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(r.QueueURL), ReceiptHandle: m.ReceiptHandle}); err != nil {
		// Stored, but the message comes back: redriving it again stores
		// nothing twice.
		res.Outcome, res.Err = Failed, fmt.Errorf("every record is stored, but deleting the message failed (it comes back; redriving it again is harmless): %w", err)
		return res
	}
	res.Outcome = Redriven
	return res
}

// kept checks that the stream still keeps the batch: its first record
// arrived less than the stream's retention period ago. The answer of
// GetShardIterator for a trimmed sequence number is no sure sign, the
// record's age is.
func (r *Redriver) kept(ctx context.Context, stream kinesisread.ARN, b *onfailure.BatchInfo) error {
	retention, err := kinesisread.Retention(ctx, r.Kinesis, stream)
	if err != nil {
		return err
	}
	arrived, err := time.Parse(time.RFC3339Nano, b.ApproximateArrivalOfFirstRecord)
	if err != nil {
		return nil // no age to go by: reading the records will tell
	}
	if now := r.now(); retention > 0 && !arrived.Add(retention).After(now) {
		return &kinesisread.GoneError{Shard: b.ShardID, Start: b.StartSequenceNumber, Arrived: arrived, Retention: retention}
	}
	return nil
}

func (r *Redriver) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}
