package shardline

import (
	"time"

	"github.com/shardline/shardline/internal/cloudevent"
	"github.com/shardline/shardline/internal/ingest"
	"github.com/shardline/shardline/internal/query"
	"github.com/shardline/shardline/internal/schema"
	"github.com/shardline/shardline/internal/shardmap"
	"github.com/shardline/shardline/internal/writer"
)

// Props configure a Pipeline; &Props{} deploys the zero-config pipeline.
//
// A field whose zero cannot be a setting (no shards, no memory) takes its
// default when zero. A field where 0 is a setting of its own (no retries, no
// batching window, alarm on any error) is a pointer, nil for the default:
// set it with Int or Duration, as CDK's own props take jsii.Number.
type Props struct {
	// CodeDir holds the function binaries as `make build` writes them:
	// CodeDir/ingest/bootstrap and CodeDir/query/bootstrap. Default "bin".
	CodeDir string

	// StreamARN ingests from an existing Kinesis stream instead of creating
	// one (on-demand, KMS-encrypted).
	StreamARN string
	// StreamKeyARN is the KMS key of an existing stream encrypted with a
	// customer managed key, so the ingest function may decrypt it.
	StreamKeyARN string

	// Shards is the base-table shard count per source (SHARDS_DEFAULT), 4.
	Shards int
	// ShardOverrides are per-source shard counts for hot sources.
	ShardOverrides map[string]int
	// GSIShards is the GSI shard count per source (GSI_SHARDS_DEFAULT), 1.
	GSIShards int
	// GSIShardOverrides are per-source GSI shard counts.
	GSIShardOverrides map[string]int
	// ShardsMax bounds adaptive sharding (SHARDS_MAX): the most base-table
	// or GSI shards the ingest function raises a hot source to, 128. The
	// counts above are the floor. Nil is the default; 0 turns it off.
	ShardsMax *int
	// GSIProjection is "full" (the GSI carries the event; the default) or
	// "lean" (keys and filter attributes only: one write unit per GSI copy
	// whatever the event's size, and pages fetch events from the table).
	GSIProjection string
	// GSICopies is the ingest function's GSI_COPIES: "always" (every event
	// gets a GSI copy; the default) or "where-it-pays" (a day's events get
	// one only when the day has fewer GSI shards than table shards, and a
	// day after a quiet day starts on one table shard without; see
	// docs/cost.md).
	GSICopies string
	// QuarantineShards shards the quarantine key space, 4.
	QuarantineShards int
	// RetentionDays is how long events are kept (the TTL), 30.
	RetentionDays int
	// MaxEventBytes is the largest event accepted, 65536.
	MaxEventBytes int
	// WriteConcurrency is BatchWriteItem requests in flight per invocation, 32.
	WriteConcurrency int
	// QueryConcurrency is Query requests in flight per page, 32.
	QueryConcurrency int
	// LogLevel of both functions: debug, info, warn or error; info.
	LogLevel string

	// IngestMemoryMB and QueryMemoryMB size the functions: 512 and 256.
	IngestMemoryMB, QueryMemoryMB int
	// IngestTimeout is the ingest function's timeout, 60 s, in whole
	// seconds; the query function's is 29 s, under API Gateway's 30.
	IngestTimeout time.Duration
	// LogRetentionDays keeps function and access logs, 30.
	LogRetentionDays int

	// BatchSize is the most Kinesis records per invocation, 500.
	BatchSize int
	// BatchingWindow is how long Lambda gathers records before it invokes,
	// in whole seconds up to 300; default 1 s. 0 invokes as soon as records
	// arrive.
	BatchingWindow *time.Duration
	// ParallelizationFactor is concurrent batches per shard, 2.
	ParallelizationFactor int
	// RetryAttempts bounds retries of a failing batch, up to 10000; default
	// 10. 0 sends a failing batch to the FailedBatches bucket at once
	// (after bisection).
	RetryAttempts *int
	// MaxRecordAge gives up on (to the FailedBatches bucket) records older
	// than this, in whole seconds; 6 h. It must be under the stream's
	// retention, so that a batch is set aside before the stream trims it: at
	// most 23 h for the created stream (24 h); for an existing stream
	// (StreamARN), keep it an hour under that stream's retention.
	MaxRecordAge time.Duration
	// FailedBatchRetentionDays is how long the FailedBatches bucket keeps a
	// batch Lambda gave up on: 14 days; at least 7.
	FailedBatchRetentionDays int

	// IngestRateLimit and IngestBurstLimit throttle POST /v1/events:
	// 1000 requests/s, burst 2000. QueryRateLimit and QueryBurstLimit
	// throttle the GET routes: 100/s, burst 200.
	IngestRateLimit, IngestBurstLimit, QueryRateLimit, QueryBurstLimit int

	// Alarm thresholds: each alarm fires when its metric exceeds the
	// threshold, so 0 alarms on the first occurrence. IteratorAgeSeconds,
	// 300; FunctionErrors per 5 minutes, 0; Throttles per 5 minutes
	// (function and table), 0; API5xx per 5 minutes, 4.
	IteratorAgeSeconds, FunctionErrors, Throttles, API5xx *int
	// AlarmTopicARN, when set, receives every alarm's state changes.
	AlarmTopicARN string

	// Archive deploys the archive (docs/archive.md): every stored event
	// also written to an S3 bucket as gzip JSON lines, partitioned by bucket
	// of sources and UTC day, with Glue tables for Athena. nil is on, the default;
	// Bool(false) leaves it out.
	Archive *bool
	// ArchiveExpiryDays deletes archived objects this many days after they
	// were written; more than RetentionDays. 0, the default, keeps them.
	ArchiveExpiryDays int

	// Tenants are the teams that share the pipeline, by name: each owns
	// the sources that begin with its prefixes, has its own routes
	// (/v1/tenants/<name>/...), a writer and a reader role, and with Stream
	// its own Kinesis stream (docs/configuration.md, "Tenants"). No two
	// tenants' prefixes may overlap. Nil or empty, the stack has none.
	Tenants map[string]Tenant
}

// Int returns a pointer to n, for the Props fields where 0 is a setting.
func Int(n int) *int { return &n }

// Bool returns a pointer to b, for the Props fields where false is a
// setting of its own.
func Bool(b bool) *bool { return &b }

// Duration returns a pointer to d, for the Props fields where 0 is a setting.
func Duration(d time.Duration) *time.Duration { return &d }

// Defaults of the Props fields that are not the functions' own.
const (
	DefaultRetryAttempts      = 10
	DefaultBatchingWindow     = time.Second
	DefaultIteratorAgeSeconds = 300
	DefaultFunctionErrors     = 0
	DefaultThrottles          = 0
	DefaultAPI5xx             = 4
	// DefaultMaxRecordAge gives a batch up after six hours of failing:
	// long enough for an outage to pass, well inside the 24 hours the
	// stream keeps records.
	DefaultMaxRecordAge = 6 * time.Hour
	// StreamRetention is how long the created stream keeps records:
	// Kinesis's default.
	StreamRetention = 24 * time.Hour
)

// withDefaults fills the fields left unset.
func (p Props) withDefaults() Props {
	p.defaultSizes()
	p.defaultOptionals()
	if p.CodeDir == "" {
		p.CodeDir = "bin"
	}
	if p.LogLevel == "" {
		p.LogLevel = "info"
	}
	if p.GSIProjection == "" {
		p.GSIProjection = string(schema.Full)
	}
	if p.GSICopies == "" {
		p.GSICopies = string(shardmap.CopiesAlways)
	}
	if p.IngestTimeout == 0 {
		p.IngestTimeout = 60 * time.Second
	}
	if p.MaxRecordAge == 0 {
		p.MaxRecordAge = DefaultMaxRecordAge
	}
	return p
}

// defaultSizes fills the whole-number fields whose zero means the default.
func (p *Props) defaultSizes() {
	for _, f := range []struct {
		v *int
		d int
	}{
		{&p.Shards, ingest.DefaultShards}, {&p.GSIShards, ingest.DefaultGSIShards},
		{&p.QuarantineShards, ingest.DefaultQuarantineShards}, {&p.RetentionDays, ingest.DefaultRetentionDays},
		{&p.MaxEventBytes, cloudevent.DefaultMaxBytes}, {&p.WriteConcurrency, writer.DefaultConcurrency},
		{&p.QueryConcurrency, query.DefaultConcurrency}, {&p.IngestMemoryMB, 512}, {&p.QueryMemoryMB, 256},
		{&p.LogRetentionDays, 30}, {&p.BatchSize, 500}, {&p.ParallelizationFactor, 2},
		{&p.IngestRateLimit, 1000}, {&p.IngestBurstLimit, 2000}, {&p.QueryRateLimit, 100}, {&p.QueryBurstLimit, 200},
		{&p.FailedBatchRetentionDays, DefaultFailedBatchRetentionDays},
	} {
		if *f.v == 0 {
			*f.v = f.d
		}
	}
}

// defaultOptionals fills the pointer fields left nil. It stores new
// pointers, never writing through the caller's.
func (p *Props) defaultOptionals() {
	for _, f := range []struct {
		v **int
		d int
	}{
		{&p.RetryAttempts, DefaultRetryAttempts}, {&p.IteratorAgeSeconds, DefaultIteratorAgeSeconds},
		{&p.FunctionErrors, DefaultFunctionErrors}, {&p.Throttles, DefaultThrottles}, {&p.API5xx, DefaultAPI5xx},
		{&p.ShardsMax, ingest.DefaultShardsMax},
	} {
		if *f.v == nil {
			*f.v = Int(f.d)
		}
	}
	if p.BatchingWindow == nil {
		p.BatchingWindow = Duration(DefaultBatchingWindow)
	}
	if p.Archive == nil {
		p.Archive = Bool(true)
	}
}
