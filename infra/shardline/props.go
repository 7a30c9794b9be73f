package shardline

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/constructs-go/constructs/v10"

	"github.com/shardline/shardline/internal/cloudevent"
	"github.com/shardline/shardline/internal/ingest"
	"github.com/shardline/shardline/internal/query"
	"github.com/shardline/shardline/internal/schema"
	"github.com/shardline/shardline/internal/writer"
	"github.com/shardline/shardline/pkg/bucketing"
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

// validate checks the props with the functions' own rules, so a bad value
// fails at synth rather than at the first invocation.
func (p Props) validate() error {
	env := p.ingestEnv("table")
	if _, err := ingest.ConfigFromEnv(func(k string) string { return env[k] }); err != nil {
		return fmt.Errorf("shardline props: %w", err)
	}
	if _, err := schema.ParseProjection(p.GSIProjection); err != nil {
		return fmt.Errorf("shardline props: %w", err)
	}
	switch {
	case p.BatchSize < 1 || p.BatchSize > 10000:
		return fmt.Errorf("shardline props: BatchSize %d is outside [1, 10000]", p.BatchSize)
	case p.ParallelizationFactor < 1 || p.ParallelizationFactor > 10:
		return fmt.Errorf("shardline props: ParallelizationFactor %d is outside [1, 10]", p.ParallelizationFactor)
	case p.RetryAttempts < 0 || p.RetryAttempts > 10000:
		return fmt.Errorf("shardline props: RetryAttempts %d is outside [0, 10000]", p.RetryAttempts)
	case p.MaxRecordAge < time.Minute || p.MaxRecordAge > 7*24*time.Hour:
		return fmt.Errorf("shardline props: MaxRecordAge %v is outside [1m, 168h]", p.MaxRecordAge)
	case p.BatchingWindow < 0 || p.BatchingWindow > 300*time.Second:
		return fmt.Errorf("shardline props: BatchingWindow %v is outside [0, 300s]", p.BatchingWindow)
	case p.IngestTimeout < 10*time.Second || p.IngestTimeout > 15*time.Minute:
		return fmt.Errorf("shardline props: IngestTimeout %v is outside [10s, 15m]", p.IngestTimeout)
	}
	return nil
}

// ingestEnv is the ingest function's environment: every variable it reads.
func (p Props) ingestEnv(table string) map[string]string {
	return map[string]string{
		ingest.EnvTable:            table,
		ingest.EnvShards:           strconv.Itoa(p.Shards),
		ingest.EnvShardOverrides:   overrides(p.ShardOverrides),
		ingest.EnvGSIShards:        strconv.Itoa(p.GSIShards),
		ingest.EnvGSIOverrides:     overrides(p.GSIShardOverrides),
		ingest.EnvQuarantineShards: strconv.Itoa(p.QuarantineShards),
		ingest.EnvRetentionDays:    strconv.Itoa(p.RetentionDays),
		ingest.EnvMaxEventBytes:    strconv.Itoa(p.MaxEventBytes),
		ingest.EnvWriteConcurrency: strconv.Itoa(p.WriteConcurrency),
		ingest.EnvLogLevel:         p.LogLevel,
	}
}

func overrides(m map[string]int) string {
	if len(m) == 0 {
		return "{}"
	}
	b, _ := json.Marshal(m) // map keys are sorted: the template is stable
	return string(b)
}

// Context keys the app reads (cdk deploy -c key=value, or cdk.json).
const (
	CtxStreamARN         = "shardline:streamArn"
	CtxStreamKeyARN      = "shardline:streamKeyArn"
	CtxShards            = "shardline:shards"
	CtxShardOverrides    = "shardline:shardOverrides" // JSON object
	CtxGSIShards         = "shardline:gsiShards"
	CtxGSIShardOverrides = "shardline:gsiShardOverrides" // JSON object
	CtxGSIProjection     = "shardline:gsiProjection"     // full or lean
	CtxQuarantineShards  = "shardline:quarantineShards"
	CtxRetentionDays     = "shardline:retentionDays"
	CtxMaxEventBytes     = "shardline:maxEventBytes"
	CtxIngestMemoryMB    = "shardline:ingestMemoryMb"
	CtxQueryMemoryMB     = "shardline:queryMemoryMb"
	CtxLogLevel          = "shardline:logLevel"
	CtxIteratorAge       = "shardline:alarmIteratorAgeSeconds"
	CtxFunctionErrors    = "shardline:alarmFunctionErrors"
	CtxThrottles         = "shardline:alarmThrottles"
	CtxAPI5xx            = "shardline:alarmApi5xx"
	CtxAlarmTopicARN     = "shardline:alarmTopicArn"
	CtxCodeDir           = "shardline:codeDir"
)

// PropsFromContext reads Props from the construct tree's context, so users
// change the configuration without editing code. Keys left unset keep
// their defaults.
func PropsFromContext(node constructs.Node) (Props, error) {
	var p Props
	var err error
	str := func(key string, dst *string) {
		if v := node.TryGetContext(&key); v != nil {
			*dst = fmt.Sprint(v)
		}
	}
	num := func(key string, dst *int) {
		v := node.TryGetContext(&key)
		if v == nil || err != nil {
			return
		}
		n, e := strconv.Atoi(fmt.Sprint(v))
		if e != nil {
			err = fmt.Errorf("context %s=%v: want a whole number", key, v)
			return
		}
		*dst = n
	}
	obj := func(key string, dst *map[string]int) {
		v := node.TryGetContext(&key)
		if v == nil || err != nil {
			return
		}
		s, ok := v.(string)
		if !ok { // given as a JSON object in cdk.json
			b, _ := json.Marshal(v)
			s = string(b)
		}
		m, e := bucketing.ParseOverrides(s)
		if e != nil {
			err = fmt.Errorf("context %s: %w", key, e)
			return
		}
		*dst = m
	}
	str(CtxStreamARN, &p.StreamARN)
	str(CtxStreamKeyARN, &p.StreamKeyARN)
	str(CtxLogLevel, &p.LogLevel)
	str(CtxAlarmTopicARN, &p.AlarmTopicARN)
	str(CtxCodeDir, &p.CodeDir)
	str(CtxGSIProjection, &p.GSIProjection)
	num(CtxShards, &p.Shards)
	num(CtxGSIShards, &p.GSIShards)
	num(CtxQuarantineShards, &p.QuarantineShards)
	num(CtxRetentionDays, &p.RetentionDays)
	num(CtxMaxEventBytes, &p.MaxEventBytes)
	num(CtxIngestMemoryMB, &p.IngestMemoryMB)
	num(CtxQueryMemoryMB, &p.QueryMemoryMB)
	num(CtxIteratorAge, &p.IteratorAgeSeconds)
	num(CtxFunctionErrors, &p.FunctionErrors)
	num(CtxThrottles, &p.Throttles)
	num(CtxAPI5xx, &p.API5xx)
	obj(CtxShardOverrides, &p.ShardOverrides)
	obj(CtxGSIShardOverrides, &p.GSIShardOverrides)
	return p, err
}
