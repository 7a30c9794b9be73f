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

func (pl *Pipeline) alarms(c constructs.Construct, p Props) {
	five := awscdk.Duration_Minutes(jsii.Number(5))
	var action awscloudwatch.IAlarmAction
	if p.AlarmTopicARN != "" {
		action = awscloudwatchactions.NewSnsAction(awssns.Topic_FromTopicArn(c, jsii.String("AlarmTopic"), jsii.String(p.AlarmTopicARN)))
	}
	alarm := func(id, what string, m awscloudwatch.IMetric, threshold int) awscloudwatch.Alarm {
		a := awscloudwatch.NewAlarm(c, jsii.String(id), &awscloudwatch.AlarmProps{
			Metric:             m,
			Threshold:          jsii.Number(float64(threshold)),
			EvaluationPeriods:  jsii.Number(1),
			ComparisonOperator: awscloudwatch.ComparisonOperator_GREATER_THAN_THRESHOLD,
			TreatMissingData:   awscloudwatch.TreatMissingData_NOT_BREACHING,
			AlarmDescription:   jsii.String(what + " (see the README's alarm section for what to do)"),
		})
		if action != nil {
			a.AddAlarmAction(action)
			a.AddOkAction(action)
		}
		pl.Alarms = append(pl.Alarms, a)
		return a
	}
	sum := func(m awscloudwatch.Metric) awscloudwatch.IMetric {
		return m.With(&awscloudwatch.MetricOptions{Statistic: jsii.String("Sum"), Period: five})
	}
	tableMetric := func(name, index string) awscloudwatch.IMetric {
		dims := map[string]*string{"TableName": pl.Table.TableName()}
		if index != "" {
			dims["GlobalSecondaryIndexName"] = jsii.String(index)
		}
		return awscloudwatch.NewMetric(&awscloudwatch.MetricProps{
			Namespace: jsii.String("AWS/DynamoDB"), MetricName: jsii.String(name), DimensionsMap: &dims,
			Statistic: jsii.String("Sum"), Period: five,
		})
	}
	iterAge := pl.Ingest.Metric(jsii.String("IteratorAge"), &awscloudwatch.MetricOptions{
		Statistic: jsii.String("Maximum"), Period: awscdk.Duration_Minutes(jsii.Number(1)),
	})
	alarm("IteratorAgeAlarm", "Ingest is falling behind the Kinesis stream", iterAge, *p.IteratorAgeSeconds*1000)
	alarm("IngestErrorsAlarm", "The ingest function failed invocations", sum(pl.Ingest.MetricErrors(nil)), *p.FunctionErrors)
	alarm("QueryErrorsAlarm", "The query function failed invocations", sum(pl.Query.MetricErrors(nil)), *p.FunctionErrors)
	alarm("IngestThrottlesAlarm", "Lambda throttled the ingest function", sum(pl.Ingest.MetricThrottles(nil)), *p.Throttles)
	alarm("QueryThrottlesAlarm", "Lambda throttled the query function", sum(pl.Query.MetricThrottles(nil)), *p.Throttles)
	alarm("TableWriteThrottlesAlarm", "DynamoDB throttled writes to the table: a hot partition", tableMetric("WriteThrottleEvents", ""), *p.Throttles)
	alarm("GSIWriteThrottlesAlarm", "DynamoDB throttled writes to the GSI: a hot GSI key", tableMetric("WriteThrottleEvents", schema.GSIName), *p.Throttles)
	alarm("FailedBatchesAlarm", "Kinesis records gave up on and sent to the on-failure queue",
		pl.FailedDLQ.MetricApproximateNumberOfMessagesVisible(&awscloudwatch.MetricOptions{Statistic: jsii.String("Maximum"), Period: five}), 0)
	alarm("Api5xxAlarm", "The API answered 5xx", sum(pl.API.MetricServerError(nil)), *p.API5xx)

	pl.Dashboard = awscloudwatch.NewDashboard(c, jsii.String("Dashboard"), &awscloudwatch.DashboardProps{})
	var widgets []awscloudwatch.IWidget
	for _, a := range pl.Alarms {
		widgets = append(widgets, awscloudwatch.NewAlarmWidget(&awscloudwatch.AlarmWidgetProps{Alarm: a, Title: a.Node().Id(), Width: jsii.Number(8)}))
	}
	pl.Dashboard.AddWidgets(widgets...)
}
