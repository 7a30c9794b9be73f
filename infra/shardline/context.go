package shardline

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/aws/constructs-go/constructs/v10"

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
