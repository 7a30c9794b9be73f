package shardline

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/aws/constructs-go/constructs/v10"

	"github.com/shardline/shardline/internal/tenant"
	"github.com/shardline/shardline/pkg/bucketing"
)

// Context keys the app reads (cdk deploy -c key=value, or cdk.json).
const (
	CtxStreamARN         = "shardline:streamArn"
	CtxStreamKeyARN      = "shardline:streamKeyArn"
	CtxShards            = "shardline:shards"
	CtxShardOverrides    = "shardline:shardOverrides" // JSON object
	CtxGSIShards         = "shardline:gsiShards"
	CtxGSIShardOverrides = "shardline:gsiShardOverrides" // JSON object
	CtxGSIProjection     = "shardline:gsiProjection"     // full or lean
	CtxGSICopies         = "shardline:gsiCopies"         // always or where-it-pays
	CtxShardsMax         = "shardline:shardsMax"         // 0 turns adaptive sharding off
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
	CtxArchive           = "shardline:archive" // true or false
	CtxArchiveExpiryDays = "shardline:archiveExpiryDays"
	// CtxFailedBatchRetentionDays is FailedBatchRetentionDays.
	CtxFailedBatchRetentionDays = "shardline:failedBatchRetentionDays"
	// CtxTenants is Tenants: a JSON object, as a string or (in cdk.json)
	// an object.
	CtxTenants = "shardline:tenants"
)

// PropsFromContext reads Props from the construct tree's context, so users
// change the configuration without editing code. Keys left unset keep
// their defaults; an explicit 0 for an alarm threshold is kept.
func PropsFromContext(node constructs.Node) (Props, error) {
	var p Props
	r := contextReader{node: node}
	r.str(CtxStreamARN, &p.StreamARN)
	r.str(CtxStreamKeyARN, &p.StreamKeyARN)
	r.str(CtxLogLevel, &p.LogLevel)
	r.str(CtxAlarmTopicARN, &p.AlarmTopicARN)
	r.str(CtxCodeDir, &p.CodeDir)
	r.str(CtxGSIProjection, &p.GSIProjection)
	r.str(CtxGSICopies, &p.GSICopies)
	r.num(CtxShards, &p.Shards)
	r.num(CtxGSIShards, &p.GSIShards)
	r.num(CtxQuarantineShards, &p.QuarantineShards)
	r.num(CtxRetentionDays, &p.RetentionDays)
	r.num(CtxMaxEventBytes, &p.MaxEventBytes)
	r.num(CtxIngestMemoryMB, &p.IngestMemoryMB)
	r.num(CtxQueryMemoryMB, &p.QueryMemoryMB)
	r.opt(CtxIteratorAge, &p.IteratorAgeSeconds)
	r.opt(CtxFunctionErrors, &p.FunctionErrors)
	r.opt(CtxThrottles, &p.Throttles)
	r.opt(CtxAPI5xx, &p.API5xx)
	r.opt(CtxShardsMax, &p.ShardsMax)
	r.flag(CtxArchive, &p.Archive)
	r.num(CtxArchiveExpiryDays, &p.ArchiveExpiryDays)
	r.num(CtxFailedBatchRetentionDays, &p.FailedBatchRetentionDays)
	r.obj(CtxShardOverrides, &p.ShardOverrides)
	r.obj(CtxGSIShardOverrides, &p.GSIShardOverrides)
	r.tenants(CtxTenants, &p.Tenants)
	return p, r.err
}

// contextReader reads context values into props, keeping the first error.
type contextReader struct {
	node constructs.Node
	err  error
}

func (r *contextReader) get(key string) any {
	if r.err != nil {
		return nil
	}
	return r.node.TryGetContext(&key)
}

func (r *contextReader) str(key string, dst *string) {
	if v := r.get(key); v != nil {
		*dst = fmt.Sprint(v)
	}
}

func (r *contextReader) num(key string, dst *int) {
	v := r.get(key)
	if v == nil {
		return
	}
	n, err := strconv.Atoi(fmt.Sprint(v))
	if err != nil {
		r.err = fmt.Errorf("context %s=%v: want a whole number", key, v)
		return
	}
	*dst = n
}

// flag reads a prop that is true or false.
func (r *contextReader) flag(key string, dst **bool) {
	v := r.get(key)
	if v == nil {
		return
	}
	b, err := strconv.ParseBool(fmt.Sprint(v))
	if err != nil {
		r.err = fmt.Errorf("context %s=%v: want true or false", key, v)
		return
	}
	*dst = &b
}

// opt reads a prop where 0 is a setting of its own.
func (r *contextReader) opt(key string, dst **int) {
	var n int
	r.num(key, &n)
	if r.get(key) != nil {
		*dst = &n
	}
}

// tenants reads the tenants' JSON object with the functions' own parser.
func (r *contextReader) tenants(key string, dst *map[string]Tenant) {
	v := r.get(key)
	if v == nil {
		return
	}
	cfg, err := tenant.Parse([]byte(jsonText(v)))
	if err != nil {
		r.err = fmt.Errorf("context %s: %w", key, err)
		return
	}
	if cfg.Len() > 0 {
		*dst = cfg.Map()
	}
}

// jsonText is a context value that holds JSON: a string as given on the
// command line, or re-encoded when cdk.json gives the object itself.
func jsonText(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func (r *contextReader) obj(key string, dst *map[string]int) {
	v := r.get(key)
	if v == nil {
		return
	}
	s, ok := v.(string)
	if !ok { // given as a JSON object in cdk.json
		b, _ := json.Marshal(v)
		s = string(b)
	}
	m, err := bucketing.ParseOverrides(s)
	if err != nil {
		r.err = fmt.Errorf("context %s: %w", key, err)
		return
	}
	*dst = m
}
