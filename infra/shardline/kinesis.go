package shardline

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskinesis"
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
	pl.ingestFrom(pl.Stream, p, "Ingest", "Lambda gave up on Kinesis batches of the ingest function", false)
	for _, name := range pl.tenantConfig.Names() {
		if s := pl.Tenants[name].Stream; s != nil {
			pl.ingestFrom(s, p, "Tenant"+tenantID(name)+"Ingest", "Lambda gave up on Kinesis batches of tenant "+name+"'s stream", true)
		}
	}
}

// ingestFrom triggers the ingest function from stream, as kinesis says.
// A tenant's stream has the same mapping as the shared one.
func (pl *Pipeline) ingestFrom(stream awskinesis.IStream, p Props, name, what string, tenant bool) {
	src := awslambdaeventsources.NewKinesisEventSource(stream, &awslambdaeventsources.KinesisEventSourceProps{
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
	pl.watchGivenUp(name, what, pl.Ingest, src.EventSourceMappingId())
	if tenant {
		pl.givenUp[len(pl.givenUp)-1].tenant = true
	}
}
