package shardline

import (
	"time"

	"github.com/shardline/shardline/internal/cloudevent"
	"github.com/shardline/shardline/internal/ingest"
	"github.com/shardline/shardline/internal/query"
	"github.com/shardline/shardline/internal/schema"
	"github.com/shardline/shardline/internal/writer"
)

// Props configure a Pipeline. The zero value of every field means its
// default, so &Props{} deploys the zero-config pipeline.
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
	// GSIProjection is "full" (the GSI carries the event; the default) or
	// "lean" (keys and filter attributes only: one write unit per GSI copy
	// whatever the event's size, and pages fetch events from the table).
	GSIProjection string
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
	// IngestTimeout is the ingest function's timeout, 60 s; the query
	// function's is 29 s, under API Gateway's 30.
	IngestTimeout time.Duration
	// LogRetentionDays keeps function and access logs, 30.
	LogRetentionDays int

	// BatchSize is the most Kinesis records per invocation, 500.
	BatchSize int
	// BatchingWindow is how long Lambda gathers records, 1 s.
	BatchingWindow time.Duration
	// ParallelizationFactor is concurrent batches per shard, 2.
	ParallelizationFactor int
	// RetryAttempts bounds retries of a failing batch, 10.
	RetryAttempts int
	// MaxRecordAge drops (to the on-failure queue) records older than this, 24 h.
	MaxRecordAge time.Duration

	// IngestRateLimit and IngestBurstLimit throttle POST /v1/events:
	// 1000 requests/s, burst 2000. QueryRateLimit and QueryBurstLimit
	// throttle the GET routes: 100/s, burst 200.
	IngestRateLimit, IngestBurstLimit, QueryRateLimit, QueryBurstLimit int

	// Alarm thresholds. IteratorAgeSeconds, 300; FunctionErrors per 5
	// minutes, 1; Throttles per 5 minutes (function and table), 1; API 5xx
	// per 5 minutes, 5.
	IteratorAgeSeconds, FunctionErrors, Throttles, API5xx int
	// AlarmTopicARN, when set, receives every alarm's state changes.
	AlarmTopicARN string
}

// withDefaults fills the zero fields.
func (p Props) withDefaults() Props {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	if p.CodeDir == "" {
		p.CodeDir = "bin"
	}
	def(&p.Shards, ingest.DefaultShards)
	def(&p.GSIShards, ingest.DefaultGSIShards)
	def(&p.QuarantineShards, ingest.DefaultQuarantineShards)
	def(&p.RetentionDays, ingest.DefaultRetentionDays)
	def(&p.MaxEventBytes, cloudevent.DefaultMaxBytes)
	def(&p.WriteConcurrency, writer.DefaultConcurrency)
	def(&p.QueryConcurrency, query.DefaultConcurrency)
	def(&p.IngestMemoryMB, 512)
	def(&p.QueryMemoryMB, 256)
	def(&p.LogRetentionDays, 30)
	def(&p.BatchSize, 500)
	def(&p.ParallelizationFactor, 2)
	def(&p.RetryAttempts, 10)
	def(&p.IngestRateLimit, 1000)
	def(&p.IngestBurstLimit, 2000)
	def(&p.QueryRateLimit, 100)
	def(&p.QueryBurstLimit, 200)
	def(&p.IteratorAgeSeconds, 300)
	def(&p.FunctionErrors, 1)
	def(&p.Throttles, 1)
	def(&p.API5xx, 5)
	if p.LogLevel == "" {
		p.LogLevel = "info"
	}
	if p.GSIProjection == "" {
		p.GSIProjection = string(schema.Full)
	}
	if p.IngestTimeout == 0 {
		p.IngestTimeout = 60 * time.Second
	}
	if p.BatchingWindow == 0 {
		p.BatchingWindow = time.Second
	}
	if p.MaxRecordAge == 0 {
		p.MaxRecordAge = 24 * time.Hour
	}
	return p
}
