package shardline

import (
	"strconv"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsevents"
	"github.com/aws/aws-cdk-go/awscdk/v2/awseventstargets"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/shardline/shardline/internal/counts"
	"github.com/shardline/shardline/internal/emf"
)

// Settings of the scheduled fold (docs/counts.md, "Lag").
const (
	// CountFoldTimeoutSeconds bounds an invocation: a minute of folds
	// (counts.FoldSpan) and, once an hour, the roll-up.
	CountFoldTimeoutSeconds = 90
	// CountFoldStallMinutes is how long the fold may write no run while
	// the counter writes links before its alarm fires.
	CountFoldStallMinutes = 2
)

// countFold declares the scheduled fold: every minute, EventBridge
// invokes it; it folds the counter's links into bucket packs (L1) and, once
// an hour, rolls the packs of the hours that ended into per-source items
// (L2). Its role reads and writes the counters' key space only (C#: the
// three levels), item by item and by Query.
func (pl *Pipeline) countFold(c constructs.Construct, p Props) {
	pl.CountFold = pl.function(c, p, "CountFold", 256, awscdk.Duration_Seconds(jsii.Number(CountFoldTimeoutSeconds)), map[string]string{
		counts.EnvTable:         *pl.Table.TableName(),
		counts.EnvRetentionDays: strconv.Itoa(p.RetentionDays),
		counts.EnvLogLevel:      p.logLevel(),
		counts.EnvBuckets:       strconv.Itoa(counts.DefaultBuckets),
	})
	rule := awsevents.NewRule(c, jsii.String("CountFoldSchedule"), &awsevents.RuleProps{
		Description: jsii.String("shardline: fold the counters every minute (docs/counts.md)"),
		Schedule:    awsevents.Schedule_Rate(awscdk.Duration_Minutes(jsii.Number(1))),
	})
	rule.AddTarget(awseventstargets.NewLambdaFunction(pl.CountFold, &awseventstargets.LambdaFunctionProps{
		RetryAttempts: jsii.Number(0), // the next minute's invocation does what a failed one left
	}))
	pl.CountFold.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:        jsii.String("CounterLevels"),
		Actions:    jsii.Strings("dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:Query"),
		Resources:  &[]*string{pl.Table.TableArn()},
		Conditions: leadingKeys("C#*"),
	}))
}

// countFoldAlarms watch the fold: its failures, and a fold that writes no
// run for CountFoldStallMinutes while the counter writes links (the counts
// then stop moving, and the 60 s promise is broken).
func (pl *Pipeline) countFoldAlarms(alarm func(id, what string, m awscloudwatch.IMetric, threshold int), p Props) {
	alarm("CountFoldErrorsAlarm", "The scheduled fold of the counters failed invocations", sum(pl.CountFold.MetricErrors(nil)), *p.FunctionErrors)
	period := awscdk.Duration_Minutes(jsii.Number(CountFoldStallMinutes))
	links := emfMetric(counts.MetricLinks, counts.Dimensions(), period)
	runs := emfMetric(counts.MetricFoldRuns, counts.FoldDimensions(), period)
	stalled := awscloudwatch.NewMathExpression(&awscloudwatch.MathExpressionProps{
		Expression:   jsii.String("IF(FILL(links, 0) > 0 AND FILL(runs, 0) == 0, 1, 0)"),
		UsingMetrics: &map[string]awscloudwatch.IMetric{"links": links, "runs": runs},
		Period:       period,
		Label:        jsii.String("links written, no fold run"),
	})
	alarm("CountFoldStalledAlarm", "The counter writes links and the scheduled fold has written no run for two minutes: the counts are not moving", stalled, 0)
}

// emfMetric is a metric the functions write in their logs (Embedded Metric
// Format), summed over period.
func emfMetric(name string, dimensions map[string]string, period awscdk.Duration) awscloudwatch.IMetric {
	dims := map[string]*string{}
	for k, v := range dimensions {
		dims[k] = jsii.String(v)
	}
	return awscloudwatch.NewMetric(&awscloudwatch.MetricProps{
		Namespace: jsii.String(emf.Namespace), MetricName: jsii.String(name), DimensionsMap: &dims,
		Statistic: jsii.String("Sum"), Period: period,
	})
}
