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

// api serves the five routes with IAM authorization, per-route throttling
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
		{awsapigatewayv2.HttpMethod_GET, query.CountsRoute, queryInt},
		{awsapigatewayv2.HttpMethod_GET, query.SourcesRoute, queryInt},
	}
	for _, r := range routes {
		pl.API.AddRoutes(&awsapigatewayv2.AddRoutesOptions{
			Path:        jsii.String(r.path),
			Methods:     &[]awsapigatewayv2.HttpMethod{r.method},
			Integration: r.target,
			Authorizer:  iam,
		})
	}
	pl.stage(c, p)
}

// stage is the API's one stage: throttled per route (RouteSettings), with
// JSON access logs.
func (pl *Pipeline) stage(c constructs.Construct, p Props) {
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
		"GET " + query.CountsRoute:     limits(p.QueryRateLimit, p.QueryBurstLimit),
		"GET " + query.SourcesRoute:    limits(p.QueryRateLimit, p.QueryBurstLimit),
	})
}
