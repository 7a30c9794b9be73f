package shardline

import (
	"strconv"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambdaeventsources"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/shardline/shardline/internal/counts"
)

// Settings of the counter's event source mapping (docs/counts.md).
const (
	// CounterBatchingWindow is how long the mapping gathers a shard's records:
	// it bounds how often a counter item is updated, hence its heat and the
	// write cost per event, and is most of the counts' lag.
	CounterBatchingWindow = 10
	// CounterTumblingWindow is there only to make Lambda send each
	// invocation's shard id; the function keeps no window state.
	CounterTumblingWindow = 15
	// CounterBatchSize is the most records per invocation.
	CounterBatchSize = 10000
	// CounterIteratorAgeSeconds is when the counts' lag alarms: the API
	// promises counts within 60 seconds of a write.
	CounterIteratorAgeSeconds = 60
)

// counter declares the counter function on the table's stream: only
// inserted events reach it, one batch per shard at a time. A batch that
// cannot succeed is bisected, retried StreamRetryAttempts times, and given
// up on, records included, to the FailedBatches bucket; `shardline redrive`
// counts exactly what it had not counted (docs/counts.md).
func (pl *Pipeline) counter(c constructs.Construct, p Props) {
	pl.Counter = pl.function(c, p, "Counter", 256, awscdk.Duration_Seconds(jsii.Number(60)), map[string]string{
		counts.EnvTable:         *pl.Table.TableName(),
		counts.EnvRetentionDays: strconv.Itoa(p.RetentionDays),
		counts.EnvLogLevel:      p.logLevel(),
	})
	insertedEvents := awslambda.FilterCriteria_Filter(&map[string]interface{}{
		"eventName": awslambda.FilterRule_IsEqual(jsii.String("INSERT")),
		"dynamodb": map[string]interface{}{
			"Keys": map[string]interface{}{"pk": map[string]interface{}{"S": awslambda.FilterRule_BeginsWith(jsii.String("E#"))}},
		},
	})
	src := awslambdaeventsources.NewDynamoEventSource(pl.Table, &awslambdaeventsources.DynamoEventSourceProps{
		StartingPosition:      awslambda.StartingPosition_TRIM_HORIZON,
		BatchSize:             jsii.Number(CounterBatchSize),
		MaxBatchingWindow:     awscdk.Duration_Seconds(jsii.Number(CounterBatchingWindow)),
		TumblingWindow:        awscdk.Duration_Seconds(jsii.Number(CounterTumblingWindow)),
		ParallelizationFactor: jsii.Number(1),
		Filters:               &[]*map[string]interface{}{insertedEvents},
		BisectBatchOnError:    jsii.Bool(true),
		RetryAttempts:         jsii.Number(StreamRetryAttempts),
		MaxRecordAge:          awscdk.Duration_Seconds(jsii.Number(StreamMaxRecordAge.Seconds())),
		OnFailure:             pl.onFailure(),
		MetricsConfig:         eventCount(),
	})
	pl.Counter.AddEventSource(src)
	pl.watchGivenUp("Counter", "Lambda gave up on table stream batches of the counter function", pl.Counter, src.EventSourceMappingId())
	// L0 (docs/counts.md): PutItem a link, Query a chain's tip,
	// UpdateItem the chains' registry, and BatchGetItem the per-source
	// counter's watermarks (the switch-over's guard, until a shard's chain
	// has a link); all in the counters' key space.
	pl.Counter.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:        jsii.String("Counters"),
		Actions:    jsii.Strings("dynamodb:PutItem", "dynamodb:Query", "dynamodb:UpdateItem", "dynamodb:BatchGetItem"),
		Resources:  &[]*string{pl.Table.TableArn()},
		Conditions: leadingKeys("C#*"),
	}))
}

// counterAlarms watch the counts' lag and the counter's failures.
func (pl *Pipeline) counterAlarms(alarm func(id, what string, m awscloudwatch.IMetric, threshold int), p Props) {
	age := pl.Counter.Metric(jsii.String("IteratorAge"), &awscloudwatch.MetricOptions{
		Statistic: jsii.String("Maximum"), Period: awscdk.Duration_Minutes(jsii.Number(1)),
	})
	alarm("CounterIteratorAgeAlarm", "The counts trail the table's writes by more than a minute", age, CounterIteratorAgeSeconds*1000)
	alarm("CounterErrorsAlarm", "The counter function failed invocations", sum(pl.Counter.MetricErrors(nil)), *p.FunctionErrors)
	pl.counterOverflowAlarm(alarm)
}
