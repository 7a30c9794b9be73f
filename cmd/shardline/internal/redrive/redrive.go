// Package redrive re-processes the stream batches that Lambda gave up on.
// Every event source mapping of the stack sends a batch it gives up on to
// one S3 bucket, as an object that holds Lambda's invocation record and
// the batch's records (package onfailure). For each object under the
// bucket's aws/lambda/ prefix, Run hands the records to the consumer that
// gave up on them, running its own code: a Kinesis batch to the ingest
// handler, a table stream batch to the counter (counts.Chain.Redrive, or
// sourcecounter.Counter.Redrive for a batch given up before the chain began) or
// the archive (archive.Function.Archive). Which consumer an object is for
// comes from the event source mapping's id in its key
// (aws/lambda/<mapping id>/...), which the stack's bucket policy lets only
// that mapping's function write under, not from the record's content. It
// deletes the object only once every record of it was processed.
// Each consumer is idempotent, so an object redriven twice, or a run that
// was interrupted and is run again, stores, counts and archives nothing
// twice.
package redrive

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/shardline/shardline/internal/archive"
	"github.com/shardline/shardline/internal/counts"
	"github.com/shardline/shardline/ops/onfailure"
	"github.com/shardline/shardline/ops/sourcecounter"
)

// S3API is the part of the S3 client redrive uses.
type S3API interface {
	ListObjectsV2(context.Context, *s3.ListObjectsV2Input, ...func(*s3.Options)) (*s3.ListObjectsV2Output, error)
	GetObject(context.Context, *s3.GetObjectInput, ...func(*s3.Options)) (*s3.GetObjectOutput, error)
	DeleteObject(context.Context, *s3.DeleteObjectInput, ...func(*s3.Options)) (*s3.DeleteObjectOutput, error)
}

// KinesisHandler is a Kinesis handler with partial batch responses, as
// ingest.Handler.Kinesis is. It is the shape local/esm drives too; redrive
// declares its own so that the operator's binary carries no local engine.
type KinesisHandler func(context.Context, events.KinesisEvent) (events.KinesisEventResponse, error)

// Consumer names who gave a batch up, and so who re-processes it.
type Consumer string

// The consumers.
const (
	Ingest  Consumer = "ingest"  // the ingest function, on the Kinesis stream
	Counter Consumer = "counter" // the counter function, on the table's stream
	Archive Consumer = "archive" // the archive function, on the table's stream
)

// Redriver re-processes what one on-failure bucket holds.
type Redriver struct {
	S3     S3API
	Bucket string
	// Ingest is the ingest function's Kinesis handler
	// (ingest.Handler.Kinesis); nil leaves Kinesis batches in the bucket.
	Ingest KinesisHandler
	// IngestFor, when set, is used instead of Ingest: the handler for a
	// batch the function named (its ARN, from Lambda's record) gave up,
	// configured as that function is. shardline redrive reads the
	// function's tenants from Lambda, so that a tenant stream's records
	// are checked as the function checks them. An error leaves the
	// object, in a dry run too.
	IngestFor func(ctx context.Context, function string) (KinesisHandler, error)
	// Chain and Counter are the counter's code: its L0 chain, and the
	// per-source counter of earlier releases, for the batches given up
	// before the chain began; Archive is the archive's. Nil leaves their
	// batches in the bucket.
	Chain   *counts.Chain
	Counter *sourcecounter.Counter
	Archive *archive.Function
	// Mappings maps the event source mappings' ids (the stack's outputs
	// IngestMappingId, CounterMappingId, ArchiveMappingId) to their
	// consumer; an object under another mapping's prefix is left.
	Mappings map[string]Consumer
	Log      *slog.Logger // progress; default: discard
}

// Defaults of Options.
const (
	DefaultAttempts      = 10
	DefaultBatchSize     = 500
	DefaultInvokeTimeout = 60 * time.Second
)

// Options say what a run does.
type Options struct {
	// DryRun reads and checks every object and reports; it processes and
	// deletes nothing.
	DryRun bool
	// Max is the most objects to handle; 0 handles all.
	Max int
	// Prefix narrows the listing, under onfailure.Prefix (the default):
	// aws/lambda/<mapping UUID>/ is one event source mapping's objects.
	Prefix string
	// Attempts is how often a consumer is run with a record before its
	// object is left for a later run; default 10.
	Attempts int
	// BatchSize is the most Kinesis records an ingest invocation gets;
	// default 500.
	BatchSize int
	// InvokeTimeout is an invocation's deadline; default 60 s.
	InvokeTimeout time.Duration
	// OnObject, when set, is told of each object's outcome.
	OnObject func(Result)
}

func (o *Options) defaults() {
	if o.Prefix == "" {
		o.Prefix = onfailure.Prefix
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
}

// Outcome is what became of an object.
type Outcome string

// The outcomes.
const (
	// Redriven: every record was processed and the object deleted.
	Redriven Outcome = "redriven"
	// WouldRedrive: a dry run read the object; nothing was done.
	WouldRedrive Outcome = "would redrive"
	// Failed: the records could not all be processed now; the object is
	// left for a later run.
	Failed Outcome = "failed"
	// Undecided: the counter cannot tell which of the records were counted
	// (sourcecounter.AmbiguousError); the object is left.
	Undecided Outcome = "undecided"
	// Unknown: the object is of an event source mapping this run was not
	// told of; it is left.
	Unknown Outcome = "unknown mapping"
	// Invalid: the object is not an on-failure record with its records; it
	// is left.
	Invalid Outcome = "invalid"
)

// Result is one object's outcome.
type Result struct {
	Key       string
	Outcome   Outcome
	Consumer  Consumer             // "" when not known
	Mapping   string               // the event source mapping's id, from the key
	Function  string               // the function that gave up, as the record names it
	Batch     *onfailure.BatchInfo // nil when Invalid
	Condition string               // why Lambda gave up
	Records   int                  // records in the object
	Done      int                  // records processed by this run
	Err       error                // why the object was left
}

// Summary counts a run's objects by outcome, and their records.
type Summary struct {
	Objects                                                     int
	Redriven, WouldRedrive, Failed, Undecided, Unknown, Invalid int
	Records, Done                                               int
}

// NeedsAttention says whether an object was left for a reason a person must
// look at.
func (s Summary) NeedsAttention() bool { return s.Failed+s.Undecided+s.Unknown+s.Invalid > 0 }

func (s *Summary) add(r Result) {
	s.Objects++
	s.Records += r.Records
	s.Done += r.Done
	switch r.Outcome {
	case Redriven:
		s.Redriven++
	case WouldRedrive:
		s.WouldRedrive++
	case Failed:
		s.Failed++
	case Undecided:
		s.Undecided++
	case Unknown:
		s.Unknown++
	case Invalid:
		s.Invalid++
	}
}

// Run handles the bucket's objects, in key order, until the listing ends,
// Max objects are handled, or ctx ends (then it returns ctx's error, and
// the object it was working on stays in the bucket).
func (r *Redriver) Run(ctx context.Context, o Options) (Summary, error) {
	o.defaults()
	if r.Log == nil {
		r.Log = slog.New(slog.DiscardHandler)
	}
	var sum Summary
	objects := r.list(o.Prefix)
	for o.Max == 0 || sum.Objects < o.Max {
		key, ok, err := objects.next(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return sum, ctx.Err()
			}
			return sum, err
		}
		if !ok {
			break
		}
		res := r.handle(ctx, o, key)
		if ctx.Err() != nil {
			return sum, ctx.Err() // interrupted: this object is not done, whatever it got to
		}
		sum.add(res)
		r.Log.Info("redrive", slog.String("key", key), slog.String("outcome", string(res.Outcome)),
			slog.String("consumer", string(res.Consumer)), slog.Int("records", res.Records), slog.Int("done", res.Done))
		if o.OnObject != nil {
			o.OnObject(res)
		}
	}
	return sum, ctx.Err()
}

// handle redrives one object.
func (r *Redriver) handle(ctx context.Context, o Options, key string) Result {
	res := Result{Key: key, Mapping: mappingOf(key)}
	body, err := r.get(ctx, key)
	if err != nil {
		res.Outcome, res.Err = Failed, err
		return res
	}
	rec, err := onfailure.Parse(body)
	if err != nil {
		res.Outcome, res.Err = Invalid, err
		return res
	}
	res.Batch, res.Condition, res.Function = rec.Batch(), rec.RequestContext.Condition, rec.FunctionName()
	b, err := records(rec)
	if err != nil {
		res.Outcome, res.Err = Invalid, err
		return res
	}
	res.Records = b.size()
	if res.Consumer, err = r.consumer(res.Mapping, rec); err != nil {
		res.Outcome, res.Err = Unknown, err
		return res
	}
	h := r.Ingest
	if res.Consumer == Ingest && r.IngestFor != nil {
		if h, err = r.IngestFor(ctx, rec.RequestContext.FunctionARN); err != nil {
			res.Outcome, res.Err = Failed, err
			return res
		}
	}
	if o.DryRun {
		res.Outcome = WouldRedrive
		return res
	}
	res.Done, err = r.process(ctx, o, res.Consumer, rec.Batch().ShardID, b, h)
	var amb *sourcecounter.AmbiguousError
	switch {
	case errors.As(err, &amb):
		res.Outcome, res.Err = Undecided, err
		return res
	case err != nil:
		res.Outcome, res.Err = Failed, fmt.Errorf("%s: %w", res.Consumer, err)
		return res
	}
	if err := r.delete(ctx, key); err != nil {
		// Processed, but the object stays: redriving it again changes nothing.
		res.Outcome, res.Err = Failed, fmt.Errorf("every record was processed, but deleting the object failed (redriving it again is harmless): %w", err)
		return res
	}
	res.Outcome = Redriven
	return res
}

// consumer is who gave rec's batch up: the consumer of the mapping whose
// prefix holds it, which must read the kind of stream rec's batch is of.
func (r *Redriver) consumer(mapping string, rec onfailure.Record) (Consumer, error) {
	c, ok := r.Mappings[mapping]
	switch {
	case !ok:
		return "", fmt.Errorf("event source mapping %s (function %s) is not one this run was given", mapping, rec.FunctionName())
	case (c == Ingest) != (rec.Source() == onfailure.Kinesis):
		return "", fmt.Errorf("mapping %s is the %s's, but the object holds a %s stream batch", mapping, c, rec.Source())
	}
	return c, nil
}

// mappingOf is the event source mapping id in key, Lambda's
// aws/lambda/<mapping id>/<shard id>/...; "" when key is not laid out so.
func mappingOf(key string) string {
	rest, ok := strings.CutPrefix(key, onfailure.Prefix)
	if !ok {
		return ""
	}
	id, _, ok := strings.Cut(rest, "/")
	if !ok {
		return ""
	}
	return id
}
