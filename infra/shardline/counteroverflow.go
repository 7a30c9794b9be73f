package shardline

import (
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/jsii-runtime-go"

	"github.com/shardline/shardline/internal/counts"
	"github.com/shardline/shardline/internal/emf"
)

// counterOverflowAlarm fires when the counters count events without their
// type: a source sent more than counts.MaxTypesPerItem types in ten minutes
// (docs/counts.md, "Overflow"). The counts stay exact; the chart by type
// shows them as "other". The metric is the scheduled fold's, whose hourly
// roll-up is where types overflow, from its log (Embedded Metric Format).
func (pl *Pipeline) counterOverflowAlarm(alarm func(id, what string, m awscloudwatch.IMetric, threshold int)) {
	dims := map[string]*string{}
	for k, v := range counts.FoldDimensions() {
		dims[k] = jsii.String(v)
	}
	overflow := awscloudwatch.NewMetric(&awscloudwatch.MetricProps{
		Namespace: jsii.String(emf.Namespace), MetricName: jsii.String(counts.MetricOverflow), DimensionsMap: &dims,
		Statistic: jsii.String("Sum"), Period: fiveMinutes(),
	})
	alarm("CounterOverflowAlarm", "A source sent more types in ten minutes than a counter item keeps: the rest are counted without their type", overflow, 0)
}
