package shardline

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2authorizers"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2integrations"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/shardline/shardline/internal/ingest"
	"github.com/shardline/shardline/internal/query"
)

// stageName is the API's one stage, as it appears in execute-api ARNs.
const stageName = "$default"

// An API route: method and path, and whether the ingest function (write)
// or the query function serves it.
type apiRoute struct {
	method, path string
	write        bool
}

// apiRoutes are the routes for trusted pipelines, over every source.
var apiRoutes = []apiRoute{
	{"POST", ingest.Route, true},
	{"GET", query.EventsRoute, false},
	{"GET", query.QuarantineRoute, false},
	{"GET", query.CountsRoute, false},
	{"GET", query.SourcesRoute, false},
}

// api serves the five routes, and each tenant's five (tenantRoutes), with
// IAM authorization, per-route throttling and access logs.
func (pl *Pipeline) api(c constructs.Construct, p Props) {
	iam := awsapigatewayv2authorizers.NewHttpIamAuthorizer()
	pl.API = awsapigatewayv2.NewHttpApi(c, jsii.String("Api"), &awsapigatewayv2.HttpApiProps{
		Description:        jsii.String("shardline event API"),
		CreateDefaultStage: jsii.Bool(false),
		DefaultAuthorizer:  iam,
	})
	ingestInt := awsapigatewayv2integrations.NewHttpLambdaIntegration(jsii.String("IngestIntegration"), pl.Ingest, nil)
	queryInt := awsapigatewayv2integrations.NewHttpLambdaIntegration(jsii.String("QueryIntegration"), pl.Query, nil)
	for _, r := range apiRoutes {
		target := awsapigatewayv2.HttpRouteIntegration(queryInt)
		if r.write {
			target = ingestInt
		}
		pl.API.AddRoutes(&awsapigatewayv2.AddRoutesOptions{
			Path:        jsii.String(r.path),
			Methods:     &[]awsapigatewayv2.HttpMethod{awsapigatewayv2.HttpMethod(r.method)},
			Integration: target,
			Authorizer:  iam,
		})
	}
	stage := pl.stage(c, p)
	pl.tenantRoutes(c, stage)
}

// stage is the API's one stage: throttled per route (RouteSettings), with
// JSON access logs.
func (pl *Pipeline) stage(c constructs.Construct, p Props) awsapigatewayv2.HttpStage {
	access := awslogs.NewLogGroup(c, jsii.String("ApiAccessLogs"), &awslogs.LogGroupProps{
		Retention:     retention(p.LogRetentionDays),
		RemovalPolicy: awscdk.RemovalPolicy_DESTROY,
	})
	stage := pl.API.AddStage(jsii.String("DefaultStage"), &awsapigatewayv2.HttpStageOptions{
		StageName:  jsii.String(stageName),
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
	settings := map[string]interface{}{}
	for _, r := range apiRoutes {
		settings[r.method+" "+r.path] = p.throttle(r.write)
	}
	pl.tenantRouteSettings(settings, p)
	cfn.SetRouteSettings(settings)
	return stage
}

// throttle is a route's RouteSettings: the ingest or the query limits.
// RouteSettings is raw JSON in the L1, so it takes CloudFormation's
// property names, not the Go struct's.
func (p Props) throttle(write bool) map[string]any {
	if write {
		return map[string]any{"ThrottlingRateLimit": p.IngestRateLimit, "ThrottlingBurstLimit": p.IngestBurstLimit}
	}
	return map[string]any{"ThrottlingRateLimit": p.QueryRateLimit, "ThrottlingBurstLimit": p.QueryBurstLimit}
}
