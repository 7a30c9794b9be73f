package shardline

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatchactions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/shardline/shardline/internal/schema"
)

// fiveMinutes is the period of every alarm but the iterator age's.
func fiveMinutes() awscdk.Duration { return awscdk.Duration_Minutes(jsii.Number(5)) }

// alarms declares one alarm per failure an operator must act on
// (docs/operations.md says what to do for each) and a dashboard of them all.
func (pl *Pipeline) alarms(c constructs.Construct, p Props) {
	var action awscloudwatch.IAlarmAction
	if p.AlarmTopicARN != "" {
		action = awscloudwatchactions.NewSnsAction(awssns.Topic_FromTopicArn(c, jsii.String("AlarmTopic"), jsii.String(p.AlarmTopicARN)))
	}
	alarm := func(id, what string, m awscloudwatch.IMetric, threshold int) {
		pl.alarm(c, action, id, what, m, threshold)
	}
	iterAge := pl.Ingest.Metric(jsii.String("IteratorAge"), &awscloudwatch.MetricOptions{
		Statistic: jsii.String("Maximum"), Period: awscdk.Duration_Minutes(jsii.Number(1)),
	})
	alarm("IteratorAgeAlarm", "Ingest is falling behind the Kinesis stream", iterAge, *p.IteratorAgeSeconds*1000)
	alarm("IngestErrorsAlarm", "The ingest function failed invocations", sum(pl.Ingest.MetricErrors(nil)), *p.FunctionErrors)
	alarm("QueryErrorsAlarm", "The query function failed invocations", sum(pl.Query.MetricErrors(nil)), *p.FunctionErrors)
	alarm("IngestThrottlesAlarm", "Lambda throttled the ingest function", sum(pl.Ingest.MetricThrottles(nil)), *p.Throttles)
	alarm("QueryThrottlesAlarm", "Lambda throttled the query function", sum(pl.Query.MetricThrottles(nil)), *p.Throttles)
	alarm("TableWriteThrottlesAlarm", "DynamoDB throttled writes to the table: a hot partition", pl.tableMetric("WriteThrottleEvents", ""), *p.Throttles)
	alarm("GSIWriteThrottlesAlarm", "DynamoDB throttled writes to the GSI: a hot GSI key", pl.tableMetric("WriteThrottleEvents", schema.GSIName), *p.Throttles)
	alarm("Api5xxAlarm", "The API answered 5xx", sum(pl.API.MetricServerError(nil)), *p.API5xx)
	pl.counterAlarms(alarm, p)
	pl.countFoldAlarms(alarm, p)
	pl.archiveAlarms(alarm, p)
	pl.givenUpAlarms(alarm)
	pl.tenantAlarm(alarm)
	pl.dashboard(c)
}

// alarm fires when m exceeds threshold in one period, so that a threshold
// of 0 means "on the first occurrence"; missing data is not a breach.
func (pl *Pipeline) alarm(c constructs.Construct, action awscloudwatch.IAlarmAction, id, what string, m awscloudwatch.IMetric, threshold int) {
	a := awscloudwatch.NewAlarm(c, jsii.String(id), &awscloudwatch.AlarmProps{
		Metric:             m,
		Threshold:          jsii.Number(float64(threshold)),
		EvaluationPeriods:  jsii.Number(1),
		ComparisonOperator: awscloudwatch.ComparisonOperator_GREATER_THAN_THRESHOLD,
		TreatMissingData:   awscloudwatch.TreatMissingData_NOT_BREACHING,
		AlarmDescription:   jsii.String(what + " (see docs/operations.md for what to do)"),
	})
	if action != nil {
		a.AddAlarmAction(action)
		a.AddOkAction(action)
	}
	pl.Alarms = append(pl.Alarms, a)
}

func sum(m awscloudwatch.Metric) awscloudwatch.IMetric {
	return m.With(&awscloudwatch.MetricOptions{Statistic: jsii.String("Sum"), Period: fiveMinutes()})
}

// tableMetric is a DynamoDB metric of the table, or of its index when index
// is not empty, summed over five minutes.
func (pl *Pipeline) tableMetric(name, index string) awscloudwatch.IMetric {
	dims := map[string]*string{"TableName": pl.Table.TableName()}
	if index != "" {
		dims["GlobalSecondaryIndexName"] = jsii.String(index)
	}
	return awscloudwatch.NewMetric(&awscloudwatch.MetricProps{
		Namespace: jsii.String("AWS/DynamoDB"), MetricName: jsii.String(name), DimensionsMap: &dims,
		Statistic: jsii.String("Sum"), Period: fiveMinutes(),
	})
}

func (pl *Pipeline) dashboard(c constructs.Construct) {
	pl.Dashboard = awscloudwatch.NewDashboard(c, jsii.String("Dashboard"), &awscloudwatch.DashboardProps{})
	var widgets []awscloudwatch.IWidget
	for _, a := range pl.Alarms {
		widgets = append(widgets, awscloudwatch.NewAlarmWidget(&awscloudwatch.AlarmWidgetProps{Alarm: a, Title: a.Node().Id(), Width: jsii.Number(8)}))
	}
	pl.Dashboard.AddWidgets(widgets...)
}
