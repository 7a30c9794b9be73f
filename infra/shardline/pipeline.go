// Package shardline is the CDK construct that deploys the shardline event
// pipeline: the events table and its GSI, a Kinesis stream, the ingest and
// query functions, the HTTP API, least-privilege IAM, alarms and a
// dashboard. Embed it in an app with NewPipeline, or deploy infra/ as is.
package shardline

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskinesis"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssecretsmanager"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/shardline/shardline/internal/schema"
	"github.com/shardline/shardline/internal/tenant"
)

// Pipeline is a deployed shardline.
type Pipeline struct {
	constructs.Construct
	Table  awsdynamodb.Table
	Stream awskinesis.IStream
	Ingest awslambda.Function
	Query  awslambda.Function
	// Counter keeps the counts GET /v1/counts serves, from the table's stream.
	Counter awslambda.Function
	// CountFold folds the counter's links and rolls them up, every minute.
	CountFold awslambda.Function
	API       awsapigatewayv2.HttpApi
	// FailedBatches holds the stream batches Lambda gave up on, records
	// included: every event source mapping's on-failure destination.
	FailedBatches awss3.Bucket
	// CursorSecret is the key that signs the query API's cursors.
	CursorSecret awssecretsmanager.Secret
	Alarms       []awscloudwatch.Alarm
	Dashboard    awscloudwatch.Dashboard
	// Archive writes every stored event to ArchiveBucket, from the table's
	// stream; ArchiveReaders is the managed policy that may read it. All
	// three are nil when Props.Archive is off.
	Archive        awslambda.Function
	ArchiveBucket  awss3.Bucket
	ArchiveReaders awsiam.ManagedPolicy
	// Tenants are each tenant's roles and stream, by name; nil without
	// Props.Tenants. GrantTenantWrite and GrantTenantRead grant more
	// principals one tenant's routes.
	Tenants map[string]*TenantResources

	givenUp      []givenUp // the mappings whose given-up batches are alarmed on
	tenantConfig *tenant.Config
}

// NewPipeline adds a pipeline to scope. It panics on invalid props, as CDK
// constructs do, with Props.Validate's error; call Validate first to get
// the error instead.
func NewPipeline(scope constructs.Construct, id string, props *Props) *Pipeline {
	if props == nil {
		props = &Props{}
	}
	p := props.withDefaults()
	if err := p.validate(); err != nil {
		panic(err)
	}
	c := constructs.NewConstruct(scope, jsii.String(id))
	pl := &Pipeline{Construct: c}
	stack := awscdk.Stack_Of(c)

	pl.table(c, p)
	pl.stream(c, p)
	pl.cursorSecret(c)
	pl.failedBatches(c, p)
	pl.tenants(c, p)
	pl.functions(c, p)
	pl.counter(c, p)
	pl.countFold(c, p)
	pl.archive(c, p)
	pl.grants(p)
	pl.kinesis(c, p)
	pl.api(c, p)
	pl.tenantGrants()
	pl.alarms(c, p)
	pl.confineGivenUp(c)

	awscdk.NewCfnOutput(stack, jsii.String("ApiUrl"), &awscdk.CfnOutputProps{Value: pl.API.ApiEndpoint(), Description: jsii.String("shardline API: POST /v1/events, GET /v1/events, /v1/quarantine, /v1/counts, /v1/sources (IAM-signed)")})
	awscdk.NewCfnOutput(stack, jsii.String("StreamName"), &awscdk.CfnOutputProps{Value: pl.Stream.StreamName(), Description: jsii.String("Kinesis stream producers put events on")})
	awscdk.NewCfnOutput(stack, jsii.String("TableName"), &awscdk.CfnOutputProps{Value: pl.Table.TableName(), Description: jsii.String("DynamoDB events table")})
	return pl
}

// table declares the events table from internal/schema, the definition
// `make run` creates locally.
func (pl *Pipeline) table(c constructs.Construct, p Props) {
	str := awsdynamodb.AttributeType_STRING
	pl.Table = awsdynamodb.NewTable(c, jsii.String("Events"), &awsdynamodb.TableProps{
		PartitionKey:                     &awsdynamodb.Attribute{Name: jsii.String(schema.PK), Type: str},
		SortKey:                          &awsdynamodb.Attribute{Name: jsii.String(schema.SK), Type: str},
		BillingMode:                      awsdynamodb.BillingMode_PAY_PER_REQUEST,
		TimeToLiveAttribute:              jsii.String(schema.TTL),
		Stream:                           awsdynamodb.StreamViewType(schema.StreamView),
		DeletionProtection:               jsii.Bool(true),
		RemovalPolicy:                    awscdk.RemovalPolicy_RETAIN,
		ContributorInsightsSpecification: &awsdynamodb.ContributorInsightsSpecification{Enabled: jsii.Bool(true)},
		PointInTimeRecoverySpecification: &awsdynamodb.PointInTimeRecoverySpecification{
			PointInTimeRecoveryEnabled: jsii.Bool(true),
		},
	})
	pl.Table.AddGlobalSecondaryIndex(&awsdynamodb.GlobalSecondaryIndexProps{
		IndexName:                        jsii.String(schema.GSIName),
		PartitionKey:                     &awsdynamodb.Attribute{Name: jsii.String(schema.GSIPK), Type: str},
		SortKey:                          &awsdynamodb.Attribute{Name: jsii.String(schema.SK), Type: str},
		ProjectionType:                   awsdynamodb.ProjectionType_INCLUDE,
		NonKeyAttributes:                 jsii.Strings(schema.Projection(p.GSIProjection).Projected()...),
		ContributorInsightsSpecification: &awsdynamodb.ContributorInsightsSpecification{Enabled: jsii.Bool(true)},
	})
}

// stream is the existing stream named by StreamARN, or a new one.
func (pl *Pipeline) stream(c constructs.Construct, p Props) {
	if p.StreamARN != "" {
		var key awskms.IKey
		if p.StreamKeyARN != "" {
			key = awskms.Key_FromKeyArn(c, jsii.String("StreamKey"), jsii.String(p.StreamKeyARN))
		}
		pl.Stream = awskinesis.Stream_FromStreamAttributes(c, jsii.String("Stream"), &awskinesis.StreamAttributes{
			StreamArn: jsii.String(p.StreamARN), EncryptionKey: key,
		})
		return
	}
	// The default retention, 24 hours: a batch given up on is kept, records
	// included, in the FailedBatches bucket, not read back from the stream.
	pl.Stream = awskinesis.NewStream(c, jsii.String("Stream"), &awskinesis.StreamProps{
		StreamMode: awskinesis.StreamMode_ON_DEMAND,
		Encryption: awskinesis.StreamEncryption_MANAGED,
	})
}
