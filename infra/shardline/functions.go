package shardline

import (
	"encoding/json"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/shardline/shardline/internal/counts"
	"github.com/shardline/shardline/internal/ingest"
	"github.com/shardline/shardline/internal/loglevel"
	"github.com/shardline/shardline/internal/query"
)

func (pl *Pipeline) function(c constructs.Construct, p Props, name string, memory int, timeout awscdk.Duration, env map[string]string) awslambda.Function {
	logs := awslogs.NewLogGroup(c, jsii.String(name+"Logs"), &awslogs.LogGroupProps{
		Retention:     retention(p.LogRetentionDays),
		RemovalPolicy: awscdk.RemovalPolicy_DESTROY,
	})
	role := awsiam.NewRole(c, jsii.String(name+"Role"), &awsiam.RoleProps{
		AssumedBy:   awsiam.NewServicePrincipal(jsii.String("lambda.amazonaws.com"), nil),
		Description: jsii.String("shardline " + name + " function: its own logs, X-Ray, and the grants below"),
	})
	logs.GrantWrite(role)
	vars := map[string]*string{}
	for k, v := range env {
		vars[k] = jsii.String(v)
	}
	lower := strings.ToLower(name)
	fn := awslambda.NewFunction(c, jsii.String(name), &awslambda.FunctionProps{
		Runtime:      awslambda.Runtime_PROVIDED_AL2023(),
		Architecture: awslambda.Architecture_ARM_64(),
		Handler:      jsii.String("bootstrap"),
		Code:         awslambda.Code_FromAsset(jsii.String(filepath.Join(p.CodeDir, lower)), nil),
		MemorySize:   jsii.Number(float64(memory)),
		Timeout:      timeout,
		Tracing:      awslambda.Tracing_ACTIVE,
		LogGroup:     logs,
		Role:         role,
		Environment:  &vars,
		Description:  jsii.String("shardline " + lower + " (see docs/configuration.md for its environment)"),
	})
	return fn
}

// functions declares the two functions, each with exactly the environment
// its code reads, the tenant variables only when there are tenants.
func (pl *Pipeline) functions(c constructs.Construct, p Props) {
	ingestEnv := p.ingestEnv(*pl.Table.TableName())
	pl.tenantEnv(ingestEnv, true)
	pl.Ingest = pl.function(c, p, "Ingest", p.IngestMemoryMB, awscdk.Duration_Seconds(jsii.Number(p.IngestTimeout.Seconds())), ingestEnv)
	queryEnv := map[string]string{
		query.EnvTable: *pl.Table.TableName(),
		// The key itself stays in Secrets Manager: the function reads it at
		// cold start (see secret.go).
		query.EnvCursorSecretARN: *pl.CursorSecret.SecretArn(),
		query.EnvConcurrency:     strconv.Itoa(p.QueryConcurrency),
		query.EnvLogLevel:        p.logLevel(),
		query.EnvCountBuckets:    strconv.Itoa(counts.DefaultBuckets),
	}
	pl.tenantEnv(queryEnv, false)
	pl.Query = pl.function(c, p, "Query", p.QueryMemoryMB, awscdk.Duration_Seconds(jsii.Number(29)), queryEnv)
}

// ingestEnv is the ingest function's environment: every variable it reads.
func (p Props) ingestEnv(table string) map[string]string {
	return map[string]string{
		ingest.EnvTable:            table,
		ingest.EnvShards:           strconv.Itoa(p.Shards),
		ingest.EnvShardOverrides:   overrides(p.ShardOverrides),
		ingest.EnvGSIShards:        strconv.Itoa(p.GSIShards),
		ingest.EnvGSIOverrides:     overrides(p.GSIShardOverrides),
		ingest.EnvShardsMax:        strconv.Itoa(*p.ShardsMax),
		ingest.EnvQuarantineShards: strconv.Itoa(p.QuarantineShards),
		ingest.EnvRetentionDays:    strconv.Itoa(p.RetentionDays),
		ingest.EnvMaxEventBytes:    strconv.Itoa(p.MaxEventBytes),
		ingest.EnvWriteConcurrency: strconv.Itoa(p.WriteConcurrency),
		ingest.EnvLogLevel:         p.logLevel(),
		ingest.EnvGSICopies:        p.GSICopies,
	}
}

// logLevel is LogLevel as both functions' LOG_LEVEL, in its canonical
// spelling.
func (p Props) logLevel() string {
	l, _ := loglevel.Parse(p.LogLevel) // validated
	return loglevel.Name(l)
}

func overrides(m map[string]int) string {
	if len(m) == 0 {
		return "{}"
	}
	b, _ := json.Marshal(m) // map keys are sorted: the template is stable
	return string(b)
}

func retention(days int) awslogs.RetentionDays {
	for _, r := range []struct {
		days int
		r    awslogs.RetentionDays
	}{
		{1, awslogs.RetentionDays_ONE_DAY}, {3, awslogs.RetentionDays_THREE_DAYS}, {5, awslogs.RetentionDays_FIVE_DAYS},
		{7, awslogs.RetentionDays_ONE_WEEK}, {14, awslogs.RetentionDays_TWO_WEEKS}, {30, awslogs.RetentionDays_ONE_MONTH},
		{60, awslogs.RetentionDays_TWO_MONTHS}, {90, awslogs.RetentionDays_THREE_MONTHS}, {180, awslogs.RetentionDays_SIX_MONTHS},
		{365, awslogs.RetentionDays_ONE_YEAR},
	} {
		if days <= r.days {
			return r.r
		}
	}
	return awslogs.RetentionDays_TEN_YEARS
}
