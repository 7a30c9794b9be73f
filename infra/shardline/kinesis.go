package shardline

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambdaeventsources"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"
)

// kinesis triggers the ingest function from the stream, with partial batch
// responses, bisection, bounded retries and record age, and an encrypted
// on-failure queue. Lambda's message there only locates a batch it gave up
// on (shard, sequence numbers); the records stay in the stream for
// StreamRetention, at least RecoverableFor after the give-up, and the queue
// keeps the message for FailedBatchesRetention, longer still, so that
// `shardline redrive` can read them back.
func (pl *Pipeline) kinesis(c constructs.Construct, p Props) {
	pl.FailedDLQ = awssqs.NewQueue(c, jsii.String("FailedBatches"), &awssqs.QueueProps{
		Encryption:      awssqs.QueueEncryption_SQS_MANAGED,
		EnforceSSL:      jsii.Bool(true),
		RetentionPeriod: awscdk.Duration_Seconds(jsii.Number(FailedBatchesRetention.Seconds())),
	})
	cdknag.NagSuppressions_AddResourceSuppressions(pl.FailedDLQ, &[]*cdknag.NagPackSuppression{{
		Id:     jsii.String("AwsSolutions-SQS3"),
		Reason: jsii.String("This queue is the dead-letter queue: the on-failure destination of the Kinesis event source mapping. A DLQ of a DLQ would only move the same records once more."),
	}}, jsii.Bool(false))
	pl.Ingest.AddEventSource(awslambdaeventsources.NewKinesisEventSource(pl.Stream, &awslambdaeventsources.KinesisEventSourceProps{
		StartingPosition:        awslambda.StartingPosition_TRIM_HORIZON,
		BatchSize:               jsii.Number(float64(p.BatchSize)),
		MaxBatchingWindow:       awscdk.Duration_Seconds(jsii.Number(p.BatchingWindow.Seconds())),
		BisectBatchOnError:      jsii.Bool(true),
		ReportBatchItemFailures: jsii.Bool(true),
		RetryAttempts:           jsii.Number(float64(*p.RetryAttempts)),
		MaxRecordAge:            awscdk.Duration_Seconds(jsii.Number(p.MaxRecordAge.Seconds())),
		ParallelizationFactor:   jsii.Number(float64(p.ParallelizationFactor)),
		OnFailure:               awslambdaeventsources.NewSqsDlq(pl.FailedDLQ),
	}))
}
