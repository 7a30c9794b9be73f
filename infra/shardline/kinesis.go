package shardline

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambdaeventsources"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
)

// kinesis triggers the ingest function from the stream, with partial batch
// responses, bisection, bounded retries and record age. A batch Lambda
// gives up on goes, records included, to the FailedBatches bucket, for
// `shardline redrive`: the stream keeps its default retention.
func (pl *Pipeline) kinesis(_ constructs.Construct, p Props) {
	src := awslambdaeventsources.NewKinesisEventSource(pl.Stream, &awslambdaeventsources.KinesisEventSourceProps{
		StartingPosition:        awslambda.StartingPosition_TRIM_HORIZON,
		BatchSize:               jsii.Number(float64(p.BatchSize)),
		MaxBatchingWindow:       awscdk.Duration_Seconds(jsii.Number(p.BatchingWindow.Seconds())),
		BisectBatchOnError:      jsii.Bool(true),
		ReportBatchItemFailures: jsii.Bool(true),
		RetryAttempts:           jsii.Number(float64(*p.RetryAttempts)),
		MaxRecordAge:            awscdk.Duration_Seconds(jsii.Number(p.MaxRecordAge.Seconds())),
		ParallelizationFactor:   jsii.Number(float64(p.ParallelizationFactor)),
		OnFailure:               pl.onFailure(),
		MetricsConfig:           eventCount(),
	})
	pl.Ingest.AddEventSource(src)
	pl.watchGivenUp("Ingest", "Lambda gave up on Kinesis batches of the ingest function", pl.Ingest, src.EventSourceMappingId())
}
