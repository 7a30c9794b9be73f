package shardline

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/shardline/shardline/internal/emf"
	"github.com/shardline/shardline/internal/ingest"
	"github.com/shardline/shardline/internal/query"
	"github.com/shardline/shardline/internal/tenant"
)

// tenantRoutes declares each tenant's five routes, IAM-authorized, on one
// integration per function. They are L1 routes: the L2 route's Lambda
// integration adds a statement to the function's resource policy per
// route, and that policy's 20 KB would run out at a dozen tenants; here
// one statement per function lets the API invoke it from the tenant
// paths, and IAM on each route decides who may call it.
func (pl *Pipeline) tenantRoutes(c constructs.Construct, stage awsapigatewayv2.HttpStage) {
	if len(pl.Tenants) == 0 {
		return
	}
	ingestInt := pl.tenantIntegration(c, "Ingest", pl.Ingest)
	queryInt := pl.tenantIntegration(c, "Query", pl.Query)
	for _, name := range pl.tenantConfig.Names() {
		for _, r := range tenantRoutes {
			target := queryInt
			if r.write {
				target = ingestInt
			}
			route := awsapigatewayv2.NewCfnRoute(c, jsii.String("Tenant"+tenantID(name)+r.method+tenantID(r.suffix[len("/v1/"):])+"Route"), &awsapigatewayv2.CfnRouteProps{
				ApiId:             pl.API.ApiId(),
				RouteKey:          jsii.String(r.method + " " + tenantPath(name, r)),
				AuthorizationType: jsii.String("AWS_IAM"),
				Target:            jsii.String("integrations/" + *target),
			})
			// The stage's RouteSettings name the route: it must exist first.
			stage.Node().AddDependency(route)
		}
	}
}

// tenantIntegration is the Lambda proxy integration of fn for the tenant
// routes, with the one permission that lets the API invoke fn on them.
func (pl *Pipeline) tenantIntegration(c constructs.Construct, name string, fn awslambda.Function) *string {
	in := awsapigatewayv2.NewHttpIntegration(c, jsii.String("Tenant"+name+"Integration"), &awsapigatewayv2.HttpIntegrationProps{
		HttpApi:              pl.API,
		IntegrationType:      awsapigatewayv2.HttpIntegrationType_AWS_PROXY,
		IntegrationUri:       fn.FunctionArn(),
		PayloadFormatVersion: awsapigatewayv2.PayloadFormatVersion_VERSION_2_0(),
	})
	fn.AddPermission(jsii.String("Tenant"+name+"Invoke"), &awslambda.Permission{
		Principal: awsiam.NewServicePrincipal(jsii.String("apigateway.amazonaws.com"), nil),
		SourceArn: awscdk.Stack_Of(c).FormatArn(&awscdk.ArnComponents{
			Service:      jsii.String("execute-api"),
			Resource:     pl.API.ApiId(),
			ResourceName: jsii.String("*/*/v1/tenants/*"),
			ArnFormat:    awscdk.ArnFormat_SLASH_RESOURCE_NAME,
		}),
	})
	return in.IntegrationId()
}

// tenantRouteSettings throttles each tenant route as its /v1/... route:
// the POST with the ingest limits, the GETs with the query limits.
func (pl *Pipeline) tenantRouteSettings(settings map[string]any, p Props) {
	for _, name := range pl.tenantConfig.Names() {
		for _, r := range tenantRoutes {
			settings[r.method+" "+tenantPath(name, r)] = p.throttle(r.write)
		}
	}
}

// tenantAlarm fires on the first refusal of a tenant's request or record
// (one outside its sources, on its route or stream): the functions count
// each in tenant.MetricRefused, from their logs, which name the caller.
// Only with tenants.
func (pl *Pipeline) tenantAlarm(alarm func(id, what string, m awscloudwatch.IMetric, threshold int)) {
	if len(pl.Tenants) == 0 {
		return
	}
	refused := func(fn string) awscloudwatch.IMetric {
		return awscloudwatch.NewMetric(&awscloudwatch.MetricProps{
			Namespace: jsii.String(emf.Namespace), MetricName: jsii.String(tenant.MetricRefused),
			DimensionsMap: &map[string]*string{"Function": jsii.String(fn)},
			Statistic:     jsii.String("Sum"), Period: fiveMinutes(),
		})
	}
	alarm("TenantRefusedAlarm", "A tenant's request or record named a source that is not the tenant's, and was refused: see the functions' logs for the caller",
		awscloudwatch.NewMathExpression(&awscloudwatch.MathExpressionProps{
			Expression:   jsii.String("FILL(ingest, 0) + FILL(query, 0)"),
			UsingMetrics: &map[string]awscloudwatch.IMetric{"ingest": refused(ingest.FunctionName), "query": refused(query.FunctionName)},
			Period:       fiveMinutes(),
			Label:        jsii.String("tenant refusals"),
		}), 0)
}
