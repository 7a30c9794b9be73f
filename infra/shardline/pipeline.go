// Package shardline is the CDK construct that deploys the shardline event
// pipeline: the events table and its GSI, a Kinesis stream, the ingest and
// query functions, the HTTP API, least-privilege IAM, alarms and a
// dashboard. Embed it in an app with NewPipeline, or deploy infra/ as is.
package shardline

import (
	"path/filepath"
	"strconv"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2authorizers"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2integrations"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatchactions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskinesis"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambdaeventsources"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"

	"github.com/shardline/shardline/internal/ingest"
	"github.com/shardline/shardline/internal/query"
	"github.com/shardline/shardline/internal/schema"
)

// Pipeline is a deployed shardline.
type Pipeline struct {
	constructs.Construct
	Table     awsdynamodb.Table
	Stream    awskinesis.IStream
	Ingest    awslambda.Function
	Query     awslambda.Function
	API       awsapigatewayv2.HttpApi
	FailedDLQ awssqs.Queue
	Alarms    []awscloudwatch.Alarm
	Dashboard awscloudwatch.Dashboard
}

// NewPipeline adds a pipeline to scope. It panics on invalid props, as CDK
// constructs do; use the props' documented ranges.
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
	pl.functions(c, p, stack)
	pl.api(c, p)
	pl.alarms(c, p)

	awscdk.NewCfnOutput(stack, jsii.String("ApiUrl"), &awscdk.CfnOutputProps{Value: pl.API.ApiEndpoint(), Description: jsii.String("shardline API: POST /v1/events, GET /v1/events, GET /v1/quarantine (IAM-signed)")})
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
	pl.Stream = awskinesis.NewStream(c, jsii.String("Stream"), &awskinesis.StreamProps{
		StreamMode: awskinesis.StreamMode_ON_DEMAND,
		Encryption: awskinesis.StreamEncryption_MANAGED,
	})
}

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
	lower := map[string]string{"Ingest": "ingest", "Query": "query"}[name]
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
		Description:  jsii.String("shardline " + lower + " (see the README for its environment)"),
	})
	return fn
}

func (pl *Pipeline) functions(c constructs.Construct, p Props, stack awscdk.Stack) {
	pl.Ingest = pl.function(c, p, "Ingest", p.IngestMemoryMB, awscdk.Duration_Seconds(jsii.Number(p.IngestTimeout.Seconds())), p.ingestEnv(*pl.Table.TableName()))
	pl.Query = pl.function(c, p, "Query", p.QueryMemoryMB, awscdk.Duration_Seconds(jsii.Number(29)), map[string]string{
		query.EnvTable: *pl.Table.TableName(),
		// A per-deployment key: the stack's UUID. Cursors are bound to their
		// query by construction; the key makes them tamper-evident and
		// useless across deployments.
		query.EnvCursorSecret: *awscdk.Fn_Select(jsii.Number(2), awscdk.Fn_Split(jsii.String("/"), stack.StackId(), nil)),
		query.EnvConcurrency:  strconv.Itoa(p.QueryConcurrency),
		query.EnvLogLevel:     p.LogLevel,
	})

	// Least privilege. The ingest function writes events and quarantined
	// records (key spaces "E#" and "Q#") and reads and writes the shard
	// records ("M#") it needs to place them; nothing else. The query
	// function only reads: the table and its one index.
	tableArn := pl.Table.TableArn()
	leading := func(prefixes ...string) *map[string]interface{} {
		return &map[string]interface{}{
			"ForAllValues:StringLike": map[string]interface{}{"dynamodb:LeadingKeys": prefixes},
		}
	}
	pl.Ingest.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:        jsii.String("WriteEventsAndQuarantine"),
		Actions:    jsii.Strings("dynamodb:BatchWriteItem"),
		Resources:  &[]*string{tableArn},
		Conditions: leading("E#*", "Q#*"),
	}))
	pl.Ingest.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:        jsii.String("ShardRecords"),
		Actions:    jsii.Strings("dynamodb:GetItem", "dynamodb:PutItem"),
		Resources:  &[]*string{tableArn},
		Conditions: leading("M#*"),
	}))
	indexArn := awscdk.Fn_Join(jsii.String(""), &[]*string{tableArn, jsii.String("/index/" + schema.GSIName)})
	pl.Query.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:       jsii.String("QueryEvents"),
		Actions:   jsii.Strings("dynamodb:Query"),
		Resources: &[]*string{tableArn, indexArn},
	}))
	if schema.Projection(p.GSIProjection) == schema.Lean {
		// A lean GSI page fetches its events from the table.
		pl.Query.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Sid:        jsii.String("FetchEvents"),
			Actions:    jsii.Strings("dynamodb:BatchGetItem"),
			Resources:  &[]*string{tableArn},
			Conditions: leading("E#*"),
		}))
	}
	pl.Query.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:        jsii.String("ReadShardRecords"),
		Actions:    jsii.Strings("dynamodb:GetItem"),
		Resources:  &[]*string{tableArn},
		Conditions: leading("M#*"),
	}))
	for _, fn := range []awslambda.Function{pl.Ingest, pl.Query} {
		cdknag.NagSuppressions_AddResourceSuppressions(fn.Role(), &[]*cdknag.NagPackSuppression{{
			Id:        jsii.String("AwsSolutions-IAM5"),
			Reason:    jsii.String("X-Ray's PutTraceSegments and PutTelemetryRecords (added by active tracing) do not support resource-level permissions; every other statement names its resource."),
			AppliesTo: &[]interface{}{"Resource::*"},
		}}, jsii.Bool(true))
	}

	pl.FailedDLQ = awssqs.NewQueue(c, jsii.String("FailedBatches"), &awssqs.QueueProps{
		Encryption:      awssqs.QueueEncryption_SQS_MANAGED,
		EnforceSSL:      jsii.Bool(true),
		RetentionPeriod: awscdk.Duration_Days(jsii.Number(14)),
	})
	cdknag.NagSuppressions_AddResourceSuppressions(pl.FailedDLQ, &[]*cdknag.NagPackSuppression{{
		Id:     jsii.String("AwsSolutions-SQS3"),
		Reason: jsii.String("This queue is the dead-letter queue: the on-failure destination of the Kinesis event source mapping. A DLQ of a DLQ would only move the same records once more."),
	}}, jsii.Bool(false))
	pl.Ingest.AddEventSource(awslambdaeventsources.NewKinesisEventSource(pl.Stream, &awslambdaeventsources.KinesisEventSourceProps{
		StartingPosition:        awslambda.StartingPosition_TRIM_HORIZON,
		BatchSize:               jsii.Number(float64(p.BatchSize)),
		MaxBatchingWindow:       awscdk.Duration_Millis(jsii.Number(float64(p.BatchingWindow.Milliseconds()))),
		BisectBatchOnError:      jsii.Bool(true),
		ReportBatchItemFailures: jsii.Bool(true),
		RetryAttempts:           jsii.Number(float64(p.RetryAttempts)),
		MaxRecordAge:            awscdk.Duration_Seconds(jsii.Number(p.MaxRecordAge.Seconds())),
		ParallelizationFactor:   jsii.Number(float64(p.ParallelizationFactor)),
		OnFailure:               awslambdaeventsources.NewSqsDlq(pl.FailedDLQ),
	}))
}

// api serves the three routes with IAM authorization, per-route throttling
// and access logs.
func (pl *Pipeline) api(c constructs.Construct, p Props) {
	iam := awsapigatewayv2authorizers.NewHttpIamAuthorizer()
	pl.API = awsapigatewayv2.NewHttpApi(c, jsii.String("Api"), &awsapigatewayv2.HttpApiProps{
		Description:        jsii.String("shardline event API"),
		CreateDefaultStage: jsii.Bool(false),
		DefaultAuthorizer:  iam,
	})
	ingestInt := awsapigatewayv2integrations.NewHttpLambdaIntegration(jsii.String("IngestIntegration"), pl.Ingest, nil)
	queryInt := awsapigatewayv2integrations.NewHttpLambdaIntegration(jsii.String("QueryIntegration"), pl.Query, nil)
	routes := []struct {
		method awsapigatewayv2.HttpMethod
		path   string
		target awsapigatewayv2.HttpRouteIntegration
	}{
		{awsapigatewayv2.HttpMethod_POST, ingest.Route, ingestInt},
		{awsapigatewayv2.HttpMethod_GET, query.EventsRoute, queryInt},
		{awsapigatewayv2.HttpMethod_GET, query.QuarantineRoute, queryInt},
	}
	for _, r := range routes {
		pl.API.AddRoutes(&awsapigatewayv2.AddRoutesOptions{
			Path:        jsii.String(r.path),
			Methods:     &[]awsapigatewayv2.HttpMethod{r.method},
			Integration: r.target,
			Authorizer:  iam,
		})
	}
	access := awslogs.NewLogGroup(c, jsii.String("ApiAccessLogs"), &awslogs.LogGroupProps{
		Retention:     retention(p.LogRetentionDays),
		RemovalPolicy: awscdk.RemovalPolicy_DESTROY,
	})
	stage := pl.API.AddStage(jsii.String("DefaultStage"), &awsapigatewayv2.HttpStageOptions{
		StageName:  jsii.String("$default"),
		AutoDeploy: jsii.Bool(true),
		Throttle: &awsapigatewayv2.ThrottleSettings{
			RateLimit:  jsii.Number(float64(p.IngestRateLimit)),
			BurstLimit: jsii.Number(float64(p.IngestBurstLimit)),
		},
	})
	cfn := stage.Node().DefaultChild().(awsapigatewayv2.CfnStage)
	cfn.SetAccessLogSettings(&awsapigatewayv2.CfnStage_AccessLogSettingsProperty{
		DestinationArn: access.LogGroupArn(),
		Format: jsii.String(`{"requestId":"$context.requestId","ip":"$context.identity.sourceIp","caller":"$context.identity.caller",` +
			`"user":"$context.identity.user","requestTime":"$context.requestTime","routeKey":"$context.routeKey",` +
			`"status":"$context.status","responseLength":"$context.responseLength","integrationError":"$context.integrationErrorMessage"}`),
	})
	// RouteSettings is raw JSON in the L1, so it takes CloudFormation's
	// property names, not the Go struct's.
	limits := func(rate, burst int) map[string]any {
		return map[string]any{"ThrottlingRateLimit": rate, "ThrottlingBurstLimit": burst}
	}
	cfn.SetRouteSettings(map[string]interface{}{
		"POST " + ingest.Route:         limits(p.IngestRateLimit, p.IngestBurstLimit),
		"GET " + query.EventsRoute:     limits(p.QueryRateLimit, p.QueryBurstLimit),
		"GET " + query.QuarantineRoute: limits(p.QueryRateLimit, p.QueryBurstLimit),
	})
}

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
			ComparisonOperator: awscloudwatch.ComparisonOperator_GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
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
	alarm("IteratorAgeAlarm", "Ingest is falling behind the Kinesis stream", iterAge, p.IteratorAgeSeconds*1000)
	alarm("IngestErrorsAlarm", "The ingest function failed invocations", sum(pl.Ingest.MetricErrors(nil)), p.FunctionErrors)
	alarm("QueryErrorsAlarm", "The query function failed invocations", sum(pl.Query.MetricErrors(nil)), p.FunctionErrors)
	alarm("IngestThrottlesAlarm", "Lambda throttled the ingest function", sum(pl.Ingest.MetricThrottles(nil)), p.Throttles)
	alarm("QueryThrottlesAlarm", "Lambda throttled the query function", sum(pl.Query.MetricThrottles(nil)), p.Throttles)
	alarm("TableWriteThrottlesAlarm", "DynamoDB throttled writes to the table: a hot partition", tableMetric("WriteThrottleEvents", ""), p.Throttles)
	alarm("GSIWriteThrottlesAlarm", "DynamoDB throttled writes to the GSI: a hot GSI key", tableMetric("WriteThrottleEvents", schema.GSIName), p.Throttles)
	alarm("FailedBatchesAlarm", "Kinesis records gave up on and sent to the on-failure queue",
		pl.FailedDLQ.MetricApproximateNumberOfMessagesVisible(&awscloudwatch.MetricOptions{Statistic: jsii.String("Maximum"), Period: five}), 1)
	alarm("Api5xxAlarm", "The API answered 5xx", sum(pl.API.MetricServerError(nil)), p.API5xx)

	pl.Dashboard = awscloudwatch.NewDashboard(c, jsii.String("Dashboard"), &awscloudwatch.DashboardProps{})
	var widgets []awscloudwatch.IWidget
	for _, a := range pl.Alarms {
		widgets = append(widgets, awscloudwatch.NewAlarmWidget(&awscloudwatch.AlarmWidgetProps{Alarm: a, Title: a.Node().Id(), Width: jsii.Number(8)}))
	}
	pl.Dashboard.AddWidgets(widgets...)
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
