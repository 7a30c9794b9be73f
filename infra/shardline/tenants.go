package shardline

import (
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskinesis"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/shardline/shardline/internal/ingest"
	"github.com/shardline/shardline/internal/query"
	"github.com/shardline/shardline/internal/tenant"
)

// Tenant is one team's share of the pipeline, a value of Props.Tenants:
// the source prefixes it owns and whether it has its own stream
// (docs/configuration.md, "Tenants").
type Tenant = tenant.Tenant

// TenantResources are what the stack made for one tenant.
type TenantResources struct {
	// Writer may call the tenant's POST route and put records on its
	// stream; Reader may call its GET routes. Both trust the stack's
	// account: its IAM policies say who may assume them.
	Writer, Reader awsiam.Role
	// Stream is the tenant's own stream, nil without "stream": true.
	Stream awskinesis.Stream
}

// A tenant's routes: the method and the path after /v1/tenants/<name>.
type tenantRoute struct {
	method, suffix string
	write          bool // the ingest function's; the others are reads
}

var tenantRoutes = []tenantRoute{
	{"POST", ingest.Route, true},
	{"GET", query.EventsRoute, false},
	{"GET", query.CountsRoute, false},
	{"GET", query.SourcesRoute, false},
	{"GET", query.QuarantineRoute, false},
}

// tenantPath is the path of one of a tenant's routes, with the tenant's
// name in it: /v1/tenants/team-a/events. A route per tenant, never a
// {tenant} parameter, so that its IAM ARN names exactly one tenant and an
// unknown tenant's request never reaches a function.
func tenantPath(name string, r tenantRoute) string {
	return "/v1/tenants/" + name + strings.TrimPrefix(r.suffix, "/v1")
}

// Bounds of the CloudFormation tokens in the tenant variables, for the
// size check at synth (tenant.MaxEnvBytes).
const (
	// streamARNMax: "arn:" + partition (aws-us-gov, 10) + ":kinesis:" +
	// region (20, above the longest) + ":" + account (12) + ":stream/" +
	// a stream name (at most 128).
	streamARNMax = 4 + 10 + 9 + 20 + 1 + 12 + 8 + 128
	// roleIDMax: a role's unique id is "AROA" and 17 characters, 21 in
	// all; 32 leaves a margin.
	roleIDMax = 32
	// maxRoutes is API Gateway's default quota of routes per HTTP API.
	maxRoutes = 300
)

// tenantConfig is Props.Tenants validated, nil without tenants.
func (p Props) tenantConfig() (*tenant.Config, error) {
	if len(p.Tenants) == 0 {
		return nil, nil
	}
	return tenant.New(p.Tenants)
}

// checkTenants validates Tenants with the functions' own rules, and that
// they fit the API's routes and the functions' environment.
func (p Props) checkTenants() error {
	cfg, err := p.tenantConfig()
	if err != nil {
		return fmt.Errorf("Tenants: %w", err)
	}
	if cfg == nil {
		return nil
	}
	var errs []error
	if n := len(apiRoutes) + len(tenantRoutes)*cfg.Len(); n > maxRoutes {
		errs = append(errs, fmt.Errorf("Tenants: %d tenants need %d routes, over API Gateway's %d routes per API; use at most %d tenants",
			cfg.Len(), n, maxRoutes, (maxRoutes-len(apiRoutes))/len(tenantRoutes)))
	}
	if n := cfg.EnvSize(streamARNMax, roleIDMax); n > tenant.MaxEnvBytes {
		errs = append(errs, fmt.Errorf("Tenants: the functions' environment would hold up to %d bytes of tenants (%s, %s, %s), over the %d shardline "+
			"keeps for them of Lambda's 4 KB; use fewer tenants, fewer or shorter prefixes, or fewer tenant streams (each costs about %d bytes)",
			n, tenant.EnvTenants, tenant.EnvStreams, tenant.EnvRoles, tenant.MaxEnvBytes, streamARNMax+10))
	}
	return errors.Join(errs...)
}

// tenantID is a tenant's name in construct and output ids, which
// CloudFormation keeps to letters and digits: the first character upper
// case and each "-" an "X" ("team-a" is "TeamXa"). Names are lower case,
// so no two map to one id.
func tenantID(name string) string {
	return strings.ToUpper(name[:1]) + strings.ReplaceAll(name[1:], "-", "X")
}

// tenants makes each tenant's roles and, with "stream": true, its stream,
// before the functions, whose environment names them.
func (pl *Pipeline) tenants(c constructs.Construct, p Props) {
	cfg, _ := p.tenantConfig() // validated
	pl.tenantConfig = cfg
	if cfg == nil {
		return
	}
	pl.Tenants = map[string]*TenantResources{}
	stack := awscdk.Stack_Of(c)
	for _, name := range cfg.Names() {
		t, _ := cfg.Tenant(name)
		id := "Tenant" + tenantID(name)
		role := func(kind, what string) awsiam.Role {
			return awsiam.NewRole(c, jsii.String(id+kind), &awsiam.RoleProps{
				AssumedBy:   awsiam.NewAccountRootPrincipal(),
				Description: jsii.String("shardline tenant " + name + ": " + what),
			})
		}
		r := &TenantResources{
			Writer: role("Writer", "POST its events, on its route and stream"),
			Reader: role("Reader", "read its events, counts, sources and quarantine"),
		}
		if t.Stream {
			r.Stream = awskinesis.NewStream(c, jsii.String(id+"Stream"), &awskinesis.StreamProps{
				StreamMode: awskinesis.StreamMode_ON_DEMAND,
				Encryption: awskinesis.StreamEncryption_MANAGED,
			})
			awscdk.NewCfnOutput(stack, jsii.String(id+"StreamName"), &awscdk.CfnOutputProps{Value: r.Stream.StreamName(),
				Description: jsii.String("tenant " + name + "'s own Kinesis stream: only its sources are stored from it")})
		}
		awscdk.NewCfnOutput(stack, jsii.String(id+"WriterRoleArn"), &awscdk.CfnOutputProps{Value: r.Writer.RoleArn(),
			Description: jsii.String("role that may POST tenant " + name + "'s events")})
		awscdk.NewCfnOutput(stack, jsii.String(id+"ReaderRoleArn"), &awscdk.CfnOutputProps{Value: r.Reader.RoleArn(),
			Description: jsii.String("role that may read tenant " + name + "'s routes")})
		pl.Tenants[name] = r
	}
}

// tenantEnv adds the tenant variables to a function's environment:
// TENANTS and TENANT_ROLES to both, TENANT_STREAMS to the ingest
// function when a tenant has a stream. Without tenants, nothing.
func (pl *Pipeline) tenantEnv(env map[string]string, streams bool) {
	if pl.tenantConfig == nil {
		return
	}
	stack := awscdk.Stack_Of(pl.Construct)
	env[tenant.EnvTenants] = pl.tenantConfig.String()
	roles := map[string]any{}
	arns := map[string]any{}
	for name, r := range pl.Tenants {
		roles[name] = map[string]any{"writer": r.Writer.RoleId(), "reader": r.Reader.RoleId()}
		if r.Stream != nil {
			arns[name] = r.Stream.StreamArn()
		}
	}
	env[tenant.EnvRoles] = *stack.ToJsonString(roles, nil)
	if streams && len(arns) > 0 {
		env[tenant.EnvStreams] = *stack.ToJsonString(arns, nil)
	}
}

// tenantGrants gives each tenant's roles their routes and stream.
func (pl *Pipeline) tenantGrants() {
	for name, r := range pl.Tenants {
		pl.GrantTenantWrite(name, r.Writer)
		pl.GrantTenantRead(name, r.Reader)
	}
}

// GrantTenantWrite lets grantee call tenant's POST route and, when the
// tenant has its own stream, put records on it: nothing of another
// tenant, and not the /v1/... routes. It panics on an unknown tenant, as
// CDK's constructs do on a bad argument.
func (pl *Pipeline) GrantTenantWrite(name string, grantee awsiam.IGrantable) awsiam.Grant {
	g := pl.grantTenant(name, grantee, true)
	if s := pl.Tenants[name].Stream; s != nil {
		s.GrantWrite(grantee)
	}
	return g
}

// GrantTenantRead lets grantee call tenant's GET routes (events, counts,
// sources, quarantine), and nothing else. It panics on an unknown tenant.
func (pl *Pipeline) GrantTenantRead(name string, grantee awsiam.IGrantable) awsiam.Grant {
	return pl.grantTenant(name, grantee, false)
}

// grantTenant grants execute-api:Invoke on exactly the tenant's write or
// read routes: one ARN a route, with the stage, method and path spelled
// out (HttpRoute.grantInvoke would turn a {tenant} parameter into "*").
func (pl *Pipeline) grantTenant(name string, grantee awsiam.IGrantable, write bool) awsiam.Grant {
	if _, ok := pl.Tenants[name]; !ok {
		panic(fmt.Sprintf("shardline: no tenant %q: the tenants are %v (Props.Tenants)", name, pl.tenantConfig.Names()))
	}
	var arns []*string
	for _, r := range tenantRoutes {
		if r.write == write {
			arns = append(arns, pl.API.ArnForExecuteApi(jsii.String(r.method), jsii.String(tenantPath(name, r)), jsii.String(stageName)))
		}
	}
	return awsiam.Grant_AddToPrincipal(&awsiam.GrantOnPrincipalOptions{
		Grantee:      grantee,
		Actions:      jsii.Strings("execute-api:Invoke"),
		ResourceArns: &arns,
	})
}
