package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go"

	"github.com/shardline/shardline/internal/ingest"
	"github.com/shardline/shardline/internal/kinesisread"
	"github.com/shardline/shardline/internal/redrive"
)

// redriveHelp is what "shardline redrive -h" prints before the flags.
const redriveHelp = `usage: shardline redrive --queue URL [--stream-arn ARN] [--dry-run] [--max N] [-v]

Re-ingests the Kinesis batches that Lambda gave up on (after RetryAttempts
or MaxRecordAge; the FailedBatchesAlarm). Each message of the on-failure
queue only points at its batch: shard, first and last sequence number. For
each message redrive

  1. reads the batch back from the stream: GetShardIterator
     AT_SEQUENCE_NUMBER at the first record, GetRecords past the last;
  2. runs the records through the ingest function's own code, as one or
     more Kinesis invocations with their real sequence numbers and arrival
     times, and sends again whatever it reports as not stored;
  3. deletes the message only once every record of the batch is stored.

Ingest is idempotent: an event is stored under the same key however often it
is sent, and one without a time gets its record's arrival time, the same on
every replay. So redriving a batch that was partly stored, or running
redrive again after an interruption, stores nothing twice. With a
ParallelizationFactor above 1 a batch's range in the shard also holds
records of other batches; redrive stores them again too, which changes
nothing. Fix the cause first (the ingest function's errors, throttling),
then redrive.

A message is left on the queue when its records have left the stream (the
stream keeps them for its retention period, counted from their arrival:
redrive says when they were trimmed; they cannot be recovered from the
stream), when they cannot all be stored now (run again later), when it is
not an on-failure record, or with --stream-arn, when it is of another
stream. Messages left are made visible again when redrive ends, so a second
run takes them up at once; one interrupted (Ctrl-C, a crash) comes back
after --visibility. While a message is worked on, its visibility is
extended.

--dry-run receives every message and reads its records back, reports, and
writes and deletes nothing. Progress goes to stderr, a line a message; the
summary to stdout. The exit status is 1 when a message needs attention
(records gone, not stored, not an on-failure record).

Configuration: the ingest function's environment variables, set as the
deployed function has them: EVENTS_TABLE (or -table), SHARDS_DEFAULT,
SHARDS_OVERRIDES, GSI_SHARDS_DEFAULT, GSI_SHARDS_OVERRIDES,
QUARANTINE_SHARDS, RETENTION_DAYS, MAX_EVENT_BYTES, WRITE_CONCURRENCY.
AWS credentials and region (the stack's) come from the SDK's default chain
(AWS_PROFILE, AWS_REGION, ...). AWS_ENDPOINT_URL_SQS,
AWS_ENDPOINT_URL_KINESIS and AWS_ENDPOINT_URL_DYNAMODB point it at local
engines, such as those make run starts.

Permissions (IAM): on the on-failure queue sqs:ReceiveMessage,
sqs:ChangeMessageVisibility and sqs:DeleteMessage; on the stream
kinesis:DescribeStreamSummary, kinesis:GetShardIterator and
kinesis:GetRecords (and kms:Decrypt on its key if it is a customer managed
one); on the events table what the ingest function may do, with
partition-key prefixes as dynamodb:LeadingKeys: dynamodb:BatchWriteItem on
E# and Q#, dynamodb:GetItem, dynamodb:PutItem and dynamodb:UpdateItem on M#,
dynamodb:PutItem on S#. --dry-run needs only the SQS and Kinesis ones
(sqs:DeleteMessage excepted). The stack's functions are not granted this:
redrive is an operator's command.

examples:
  shardline redrive --queue "$QUEUE_URL" --stream-arn "$STREAM_ARN" --dry-run
  shardline redrive --queue "$QUEUE_URL" --stream-arn "$STREAM_ARN"
  shardline redrive --queue "$QUEUE_URL" --max 10

  the queue is the stack's whose name holds FailedBatches:
  QUEUE_URL=$(aws sqs list-queues --queue-name-prefix Shardline \
      --query "QueueUrls[?contains(@, 'FailedBatches')] | [0]" --output text)

  against make run's local engines (it prints this command with their ports):
  EVENTS_TABLE=shardline-events AWS_REGION=us-east-1 AWS_ACCESS_KEY_ID=local AWS_SECRET_ACCESS_KEY=local \
  AWS_ENDPOINT_URL_DYNAMODB=http://127.0.0.1:8000 AWS_ENDPOINT_URL_KINESIS=http://127.0.0.1:4567 \
  AWS_ENDPOINT_URL_SQS=http://127.0.0.1:9324 \
      shardline redrive --queue http://127.0.0.1:9324/000000000000/shardline-failed-batches

flags:
`

// redriveFlags are the flags of "shardline redrive".
type redriveFlags struct {
	fs               *flag.FlagSet
	queue, stream    string
	table            string
	dryRun, verbose  bool
	max, attempts    int
	visibility, wait time.Duration
}

func newRedriveFlags(stderr io.Writer) *redriveFlags {
	f := &redriveFlags{fs: flag.NewFlagSet("shardline redrive", flag.ContinueOnError)}
	fs := f.fs
	fs.SetOutput(stderr)
	fs.StringVar(&f.queue, "queue", "", "URL of the on-failure SQS queue (required; the FailedBatches queue of the stack)")
	fs.StringVar(&f.stream, "stream-arn", "", "redrive only the batches of this stream; leave the others on the queue")
	fs.BoolVar(&f.dryRun, "dry-run", false, "read each message and its records back and report; write and delete nothing")
	fs.IntVar(&f.max, "max", 0, "handle at most this many messages (0: all)")
	fs.StringVar(&f.table, "table", "", "the events table (default $EVENTS_TABLE)")
	fs.IntVar(&f.attempts, "attempts", redrive.DefaultAttempts, "invocations of the ingest code for a record before its message is left for a later run")
	fs.DurationVar(&f.visibility, "visibility", redrive.DefaultVisibility, "how long a message being redriven stays hidden from other readers; extended while it is worked on")
	fs.DurationVar(&f.wait, "wait", redrive.DefaultWait, "long poll of a receive (at most 20s); redrive ends at the first that brings nothing new")
	fs.BoolVar(&f.verbose, "v", false, "also log the ingest code's own lines")
	fs.Usage = func() {
		fmt.Fprint(stderr, redriveHelp)
		fs.PrintDefaults()
	}
	return f
}

func (f *redriveFlags) parse(args []string) error {
	if err := f.fs.Parse(args); err != nil {
		return err
	}
	if f.fs.NArg() > 0 {
		return fmt.Errorf("redrive takes no arguments, got %q; flags go before anything else", f.fs.Args())
	}
	if f.queue == "" {
		return errors.New("--queue is required: the URL of the on-failure queue, the stack's queue whose name holds FailedBatches (aws sqs list-queues --queue-name-prefix Shardline lists the stack's queues)")
	}
	if f.stream != "" {
		if _, err := kinesisread.ParseARN(f.stream); err != nil {
			return fmt.Errorf("--stream-arn: %w", err)
		}
	}
	if f.max < 0 {
		return fmt.Errorf("--max %d: must be 0 (all) or more", f.max)
	}
	if f.visibility < time.Second || f.visibility > 12*time.Hour {
		return fmt.Errorf("--visibility %v: must be between 1s and 12h (SQS's limits)", f.visibility)
	}
	return nil
}

// redriveCmd is "shardline redrive".
func redriveCmd(args []string, stdout, stderr io.Writer) error {
	f := newRedriveFlags(stderr)
	if err := f.parse(args); err != nil {
		return err
	}
	env, err := newQuarantineEnv(f.table)
	if err != nil {
		return err
	}
	defer env.stop()
	awsCfg, err := config.LoadDefaultConfig(env.ctx)
	if err != nil {
		return fmt.Errorf("load AWS configuration: %w", err)
	}
	ingestLevel := slog.LevelWarn
	if f.verbose {
		ingestLevel = slog.LevelInfo
	}
	r := &redrive.Redriver{
		SQS:      sqs.NewFromConfig(awsCfg),
		QueueURL: f.queue,
		Kinesis:  kinesis.NewFromConfig(awsCfg),
		Ingest: ingest.New(env.cfg, env.client, ingest.Options{
			Logger: slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: ingestLevel})),
		}).Kinesis,
		Log: slog.New(slog.NewTextHandler(stderr, nil)),
	}
	o := redrive.Options{
		StreamARN: f.stream, DryRun: f.dryRun, Max: f.max, Attempts: f.attempts,
		Visibility: f.visibility, Wait: f.wait,
		OnMessage: func(res redrive.Result) { printRedriven(stderr, res) },
	}
	if f.dryRun {
		fmt.Fprintln(stderr, "dry run: nothing is written or deleted")
	}
	sum, err := r.Run(env.ctx, o)
	printRedriveSummary(stdout, f, env.cfg, sum)
	return redriveError(err, sum)
}

// printRedriven is a message's progress line.
func printRedriven(w io.Writer, res redrive.Result) {
	where := res.MessageID
	if b := res.Batch; b != nil {
		where = fmt.Sprintf("%s %s..%s (%d %s, %s)", b.ShardID, b.StartSequenceNumber, b.EndSequenceNumber,
			b.BatchSize, plural(b.BatchSize, "record", "records"), res.Condition)
	}
	what := ""
	switch res.Outcome {
	case redrive.Redriven:
		what = fmt.Sprintf("%d records read back and stored; message deleted", res.Stored)
	case redrive.WouldRedrive:
		what = fmt.Sprintf("%d records read back; a redrive would store them", res.Records)
	case redrive.OtherStream:
		what = "of stream " + res.Batch.StreamARN + "; left on the queue"
	default:
		what = fmt.Sprintf("%v; the message stays on the queue", res.Err)
	}
	fmt.Fprintf(w, "%-13s  %s: %s\n", res.Outcome, where, what)
}

// printRedriveSummary prints what a run did, or in a dry run would do.
func printRedriveSummary(w io.Writer, f *redriveFlags, cfg ingest.Config, s redrive.Summary) {
	head := "redrive"
	if f.dryRun {
		head = "dry run (nothing written or deleted)"
	}
	streams := "every stream"
	if f.stream != "" {
		streams = "stream " + f.stream
	}
	fmt.Fprintf(w, "%s of queue %s, %s, into table %s:\n", head, f.queue, streams, cfg.Table)
	fmt.Fprintf(w, "  messages          %d\n", s.Messages)
	if f.dryRun {
		fmt.Fprintf(w, "  would redrive     %d (%d records read back)\n", s.WouldRedrive, s.Records)
	} else {
		fmt.Fprintf(w, "  redriven          %d (%d records stored; messages deleted)\n", s.Redriven, s.Stored)
	}
	fmt.Fprintf(w, "  records gone      %d (no longer in the stream: not recoverable from it; messages left)\n", s.Gone)
	fmt.Fprintf(w, "  failed            %d (not read or not all stored for now; messages left: run again)\n", s.Failed)
	if s.Invalid > 0 {
		fmt.Fprintf(w, "  not on-failure    %d (not a Kinesis on-failure record; messages left)\n", s.Invalid)
	}
	if s.Other > 0 {
		fmt.Fprintf(w, "  other streams     %d (left on the queue)\n", s.Other)
	}
}

// redriveError says what to do about a run's outcome.
func redriveError(err error, s redrive.Summary) error {
	var api smithy.APIError
	switch {
	case errors.Is(err, context.Canceled):
		return errors.New("redrive interrupted: messages redriven so far are deleted, the others stay on the queue; run the same command again to finish")
	case errors.As(err, &api) && (api.ErrorCode() == "AccessDenied" || api.ErrorCode() == "AccessDeniedException"):
		return fmt.Errorf("redrive: %w; check that these credentials have the permissions that shardline redrive -h lists", err)
	case err != nil:
		return fmt.Errorf("redrive: %w", err)
	case s.NeedsAttention():
		n := s.Gone + s.Failed + s.Invalid
		return fmt.Errorf("%d %s attention (see the lines above): records gone from the stream are lost to it; for failed ones, fix the cause and run again",
			n, plural(n, "message needs", "messages need"))
	}
	return nil
}
