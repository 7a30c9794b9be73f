package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"

	"github.com/shardline/shardline/cmd/shardline/internal/redrive"
	"github.com/shardline/shardline/internal/archive"
	"github.com/shardline/shardline/internal/counts"
	"github.com/shardline/shardline/internal/ingest"
	"github.com/shardline/shardline/ops/onfailure"
	"github.com/shardline/shardline/ops/plural"
	"github.com/shardline/shardline/ops/sourcecounter"
)

// redriveHelp is what "shardline redrive -h" prints before the flags.
const redriveHelp = `usage: shardline redrive --bucket NAME --ingest-mapping ID --counter-mapping ID --archive-mapping ID [--dry-run] [--max N] [-v]

Re-processes the stream batches that Lambda gave up on: the ingest
function's on the Kinesis stream, and the counter's and the archive's on
the table's stream. Each event source mapping gives a batch up after its
retries (RetryAttempts) or its record age (MaxRecordAge), and writes it,
records included, to the stack's FailedBatches bucket under aws/lambda/;
the alarms IngestGivenUpAlarm, CounterGivenUpAlarm and ArchiveGivenUpAlarm
fire. The bucket keeps an object for FailedBatchRetentionDays (14 by
default, at least 7). For each object redrive

  1. reads Lambda's record and the batch's records it holds;
  2. runs them through the code of the function that gave up on them: a
     Kinesis batch through the ingest code (retrying what it reports as not
     stored), a table stream batch through the counter's or the archive's.
     Which one comes from the event source mapping's id in the object's key
     (aws/lambda/<mapping id>/...): the bucket's policy lets each function
     write only under its own mapping's id, so a function cannot have its
     records run through another's code;
  3. deletes the object only once every record of it was processed.

Each is idempotent, so an object redriven twice, or a run interrupted
(Ctrl-C, a crash) and started again, stores, counts and archives nothing
twice: an event is stored under the same key however often it is sent; the
archive rewrites the batch's own objects; the counter counts exactly the
events that the batch's failed attempts had not, which each failed attempt
notes in the table, under a watermark of the batch's own.

An object is left in the bucket, and the exit status is 1, when its
records cannot all be processed now (fix the cause, run again), when the
counter cannot tell which of its events were counted (see
docs/failed-batches.md), when it is of a mapping not named here, or when it
is not an on-failure record. --dry-run reads every object and reports,
and changes nothing. Progress goes to stderr, a line an object; the summary
to stdout.

Configuration: the ingest function's environment variables, set as the
deployed function has them: EVENTS_TABLE (or -table), SHARDS_DEFAULT,
SHARDS_OVERRIDES, GSI_SHARDS_DEFAULT, GSI_SHARDS_OVERRIDES,
QUARANTINE_SHARDS, RETENTION_DAYS, MAX_EVENT_BYTES, WRITE_CONCURRENCY.
The tenants (TENANTS, TENANT_STREAMS) are read from the deployed ingest
function named in Lambda's record (--tenants function, the default), so
that a tenant's own stream's records are checked against the tenant's
prefixes as the function checks them, and a foreign one is quarantined,
never stored; an object whose function cannot be read, or writes another
table, stays. --tenants env takes them from this environment instead (make
run's engines have no Lambda to ask; unset, there are no tenants). AWS
credentials and region (the stack's) come from the SDK's default chain
(AWS_PROFILE, AWS_REGION, ...). AWS_ENDPOINT_URL_S3 and
AWS_ENDPOINT_URL_DYNAMODB point it at local engines, such as those make
run starts (the S3 one is then addressed path-style). The archive's
objects go to --archive-bucket, or to --archive-dir for make run's.

Permissions (IAM), each needed only on what is shown: on the events table,
the partition keys that begin so (grant them with dynamodb:LeadingKeys); in
a bucket, the keys that match:

  redrive --dry-run:
    s3:ListBucket            the FailedBatches bucket
    s3:GetObject             aws/lambda/* in the FailedBatches bucket
    lambda:GetFunctionConfiguration  the ingest function (with --tenants function, the default)
  redrive, besides what --dry-run needs (what the ingest, counter and archive functions may do):
    s3:DeleteObject          aws/lambda/* in the FailedBatches bucket
    dynamodb:BatchWriteItem  E# (events), Q# (quarantined records)
    dynamodb:GetItem         M# (shard records), C# (counters)
    dynamodb:PutItem         M# (shard records), S# (the sources catalogue), C# (counters)
    dynamodb:UpdateItem      M# (hour indexes), C# (counters)
    dynamodb:Query           C# (counters)
    dynamodb:BatchGetItem    M# (shard records), C# (counters)
    s3:PutObject             events/* in the ArchiveBucket bucket (with --archive-bucket)

The stack's functions are not granted this: redrive is an operator's
command.

examples:
  shardline redrive --bucket "$(out FailedBatchesBucket)" --ingest-mapping "$(out IngestMappingId)" \
      --counter-mapping "$(out CounterMappingId)" --archive-mapping "$(out ArchiveMappingId)" \
      --archive-bucket "$(out ArchiveBucket)" --dry-run

  where out reads an output of the stack (Shardline, or the name you deployed it under):
  out() { aws cloudformation describe-stacks --stack-name Shardline \
      --query "Stacks[0].Outputs[?OutputKey=='$1'].OutputValue" --output text; }

  against make run's local engines (it prints this command with their ports and paths):
  EVENTS_TABLE=shardline-events AWS_REGION=us-east-1 AWS_ACCESS_KEY_ID=local AWS_SECRET_ACCESS_KEY=local \
  AWS_ENDPOINT_URL_DYNAMODB=http://127.0.0.1:8000 AWS_ENDPOINT_URL_S3=http://127.0.0.1:4568 \
      shardline redrive --bucket shardline-failed-batches --ingest-mapping local-ingest \
      --counter-mapping local-counter --archive-mapping local-archive --archive-dir /tmp/shardline-archive-123

flags:
`

// redriveFlags are the flags of "shardline redrive".
type redriveFlags struct {
	fs                                *flag.FlagSet
	bucket, prefix, table             string
	ingestMap, counterMap, archiveMap string
	archiveBucket, archiveDir         string
	tenants                           string
	dryRun, verbose                   bool
	max, attempts                     int
}

func newRedriveFlags(stderr io.Writer) *redriveFlags {
	f := &redriveFlags{fs: flag.NewFlagSet("shardline redrive", flag.ContinueOnError)}
	fs := f.fs
	fs.SetOutput(stderr)
	fs.StringVar(&f.bucket, "bucket", "", "the on-failure bucket (required; the stack's FailedBatchesBucket output)")
	fs.StringVar(&f.ingestMap, "ingest-mapping", "", "id of the ingest function's event source mapping (IngestMappingId): its batches are ingested again")
	fs.StringVar(&f.counterMap, "counter-mapping", "", "id of the counter function's event source mapping (CounterMappingId): its batches are counted again")
	fs.StringVar(&f.archiveMap, "archive-mapping", "", "id of the archive function's event source mapping (ArchiveMappingId): its batches are archived again")
	fs.StringVar(&f.archiveBucket, "archive-bucket", "", "the archive bucket (ArchiveBucket) that redriven archive batches are written to")
	fs.StringVar(&f.archiveDir, "archive-dir", "", "a directory to write redriven archive batches to instead, as make run's archive")
	fs.StringVar(&f.prefix, "prefix", onfailure.Prefix, "redrive only the objects under this prefix (aws/lambda/<mapping id>/ is one event source mapping's)")
	fs.BoolVar(&f.dryRun, "dry-run", false, "read and check each object and report; process and delete nothing")
	fs.IntVar(&f.max, "max", 0, "handle at most this many objects (0: all)")
	fs.StringVar(&f.table, "table", "", "the events table (default $EVENTS_TABLE)")
	fs.IntVar(&f.attempts, "attempts", redrive.DefaultAttempts, "runs of a consumer's code with a batch before its object is left for a later run")
	fs.StringVar(&f.tenants, "tenants", tenantsFromFunction, "where the ingest function's tenants come from: \"function\", its configuration in Lambda; \"env\", TENANTS and TENANT_STREAMS here")
	fs.BoolVar(&f.verbose, "v", false, "also log the consumers' own lines")
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
	switch {
	case f.fs.NArg() > 0:
		return fmt.Errorf("redrive takes no arguments, got %q; flags go before anything else", f.fs.Args())
	case f.bucket == "":
		return errors.New("--bucket is required: the on-failure bucket, the stack's FailedBatchesBucket output (shardline redrive -h shows how to read it)")
	case f.max < 0:
		return fmt.Errorf("--max %d: must be 0 (all) or more", f.max)
	case f.archiveBucket != "" && f.archiveDir != "":
		return errors.New("--archive-bucket and --archive-dir: give one, where the archive is")
	case f.tenants != tenantsFromFunction && f.tenants != tenantsFromEnv:
		return fmt.Errorf("--tenants %q: give %q (the ingest function's, read from Lambda) or %q (TENANTS and TENANT_STREAMS of this environment)", f.tenants, tenantsFromFunction, tenantsFromEnv)
	case !strings.HasPrefix(f.prefix, onfailure.Prefix):
		return fmt.Errorf("--prefix %q: Lambda writes under %s; give that or a prefix under it", f.prefix, onfailure.Prefix)
	}
	seen := map[string]string{}
	for _, m := range []struct{ flag, id string }{{"--ingest-mapping", f.ingestMap}, {"--counter-mapping", f.counterMap}, {"--archive-mapping", f.archiveMap}} {
		switch {
		case m.id == "":
		case strings.Contains(m.id, "/"):
			return fmt.Errorf("%s %q: an event source mapping's id, such as the stack's output, not a key or an ARN", m.flag, m.id)
		case seen[m.id] != "":
			return fmt.Errorf("%s and %s are the same mapping %s: each consumer has its own", seen[m.id], m.flag, m.id)
		default:
			seen[m.id] = m.flag
		}
	}
	if len(seen) == 0 {
		return errors.New("name at least one mapping to redrive: --ingest-mapping, --counter-mapping, --archive-mapping (the stack's outputs IngestMappingId, CounterMappingId, ArchiveMappingId)")
	}
	return nil
}

// mappings maps the named mappings to their consumers.
func (f *redriveFlags) mappings() map[string]redrive.Consumer {
	m := map[string]redrive.Consumer{}
	for id, c := range map[string]redrive.Consumer{f.ingestMap: redrive.Ingest, f.counterMap: redrive.Counter, f.archiveMap: redrive.Archive} {
		if id != "" {
			m[id] = c
		}
	}
	return m
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
	s3c := s3.NewFromConfig(awsCfg, func(o *s3.Options) {
		// A local S3 (make run's) answers path-style only, and without the
		// response checksums the SDK would otherwise log about.
		o.UsePathStyle = os.Getenv("AWS_ENDPOINT_URL_S3") != "" || os.Getenv("AWS_ENDPOINT_URL") != ""
		o.DisableLogOutputChecksumValidationSkipped = true
	})
	level := slog.LevelWarn
	if f.verbose {
		level = slog.LevelInfo
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	ingests := &ingestByFunction{from: f.tenants, cfg: env.cfg, lambda: lambda.NewFromConfig(awsCfg),
		new: func(cfg ingest.Config) redrive.KinesisHandler {
			return ingest.New(cfg, env.client, ingest.Options{Logger: logger}).Kinesis
		}}
	r := &redrive.Redriver{
		S3: s3c, Bucket: f.bucket, Mappings: f.mappings(), IngestFor: ingests.handler,
		Chain:   &counts.Chain{Client: env.client, Table: env.cfg.Table, Retention: env.cfg.Retention},
		Counter: &sourcecounter.Counter{Client: env.client, Table: env.cfg.Table, Retention: env.cfg.Retention},
		Log:     slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level})),
	}
	switch {
	case f.archiveBucket != "":
		r.Archive = archive.New(archive.Config{Bucket: f.archiveBucket}, s3c, archive.Options{Logger: logger})
	case f.archiveDir != "":
		r.Archive = &archive.Function{Store: archive.Dir(f.archiveDir), Log: logger}
	}
	if f.dryRun {
		fmt.Fprintln(stderr, "dry run: nothing is processed or deleted")
	}
	sum, err := r.Run(env.ctx, redrive.Options{
		DryRun: f.dryRun, Max: f.max, Prefix: f.prefix, Attempts: f.attempts,
		OnObject: func(res redrive.Result) { printRedriven(stderr, res) },
	})
	printRedriveSummary(stdout, f, env.cfg, sum)
	return redriveError(err, sum)
}

// printRedriven is an object's progress line.
func printRedriven(w io.Writer, res redrive.Result) {
	where := res.Key
	if b := res.Batch; b != nil {
		where = fmt.Sprintf("%s %s %s..%s (%d %s, %s)", res.Function, b.ShardID, b.StartSequenceNumber, b.EndSequenceNumber,
			b.BatchSize, plural.Of(b.BatchSize, "record", "records"), res.Condition)
	}
	what := ""
	switch res.Outcome {
	case redrive.Redriven:
		what = fmt.Sprintf("%d records through the %s code; object deleted", res.Done, res.Consumer)
	case redrive.WouldRedrive:
		what = fmt.Sprintf("%d records; a redrive would run them through the %s code", res.Records, res.Consumer)
	default:
		what = fmt.Sprintf("%v; the object stays (%s)", res.Err, res.Key)
	}
	fmt.Fprintf(w, "%-16s  %s: %s\n", res.Outcome, where, what)
}

// printRedriveSummary prints what a run did, or in a dry run would do.
func printRedriveSummary(w io.Writer, f *redriveFlags, cfg ingest.Config, s redrive.Summary) {
	head := "redrive"
	if f.dryRun {
		head = "dry run (nothing processed or deleted)"
	}
	fmt.Fprintf(w, "%s of s3://%s/%s into table %s:\n", head, f.bucket, f.prefix, cfg.Table)
	fmt.Fprintf(w, "  objects           %d\n", s.Objects)
	if f.dryRun {
		fmt.Fprintf(w, "  would redrive     %d (%d records)\n", s.WouldRedrive, s.Records)
	} else {
		fmt.Fprintf(w, "  redriven          %d (%d records processed; objects deleted)\n", s.Redriven, s.Done)
	}
	fmt.Fprintf(w, "  failed            %d (not all processed for now; objects left: fix the cause, run again)\n", s.Failed)
	if s.Undecided > 0 {
		fmt.Fprintf(w, "  undecided         %d (the counter cannot tell what was counted; objects left: see docs/failed-batches.md)\n", s.Undecided)
	}
	if s.Unknown > 0 {
		fmt.Fprintf(w, "  unknown mapping   %d (of a mapping not named with --ingest-mapping, --counter-mapping or --archive-mapping; objects left)\n", s.Unknown)
	}
	if s.Invalid > 0 {
		fmt.Fprintf(w, "  invalid           %d (not an on-failure record with its records; objects left)\n", s.Invalid)
	}
}

// redriveError says what to do about a run's outcome.
func redriveError(err error, s redrive.Summary) error {
	var api smithy.APIError
	switch {
	case errors.Is(err, context.Canceled):
		return errors.New("redrive interrupted: objects redriven so far are deleted, the others stay in the bucket; run the same command again to finish")
	case errors.As(err, &api) && (api.ErrorCode() == "AccessDenied" || api.ErrorCode() == "AccessDeniedException"):
		return fmt.Errorf("redrive: %w; check that these credentials have the permissions that shardline redrive -h lists", err)
	case err != nil:
		return fmt.Errorf("redrive: %w", err)
	case s.NeedsAttention():
		n := s.Failed + s.Undecided + s.Unknown + s.Invalid
		return fmt.Errorf("%d %s attention (see the lines above): for failed ones, fix the cause and run again", n, plural.Of(n, "object needs", "objects need"))
	}
	return nil
}
