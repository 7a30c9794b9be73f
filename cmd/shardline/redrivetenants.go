package main

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/lambda"

	"github.com/shardline/shardline/cmd/shardline/internal/redrive"
	"github.com/shardline/shardline/internal/ingest"
	"github.com/shardline/shardline/internal/tenant"
)

// Where redrive takes the tenants of the ingest function from (--tenants).
const (
	tenantsFromFunction = "function" // Lambda's configuration of the function that gave the batch up
	tenantsFromEnv      = "env"      // this process's TENANTS and TENANT_STREAMS
)

// lambdaAPI is the part of the Lambda client redrive uses.
type lambdaAPI interface {
	GetFunctionConfiguration(context.Context, *lambda.GetFunctionConfigurationInput, ...func(*lambda.Options)) (*lambda.GetFunctionConfigurationOutput, error)
}

// ingestByFunction builds the ingest handler a given-up Kinesis batch is
// run through, one per function and run. With tenantsFromFunction the
// tenants are the function's own: a record of a tenant's stream is then
// checked against that tenant's prefixes (and quarantined "tenant: ..."
// when it is foreign) whatever this process's environment holds, which
// an operator could not be relied on to copy.
type ingestByFunction struct {
	from   string
	cfg    ingest.Config // from this process's environment
	new    func(ingest.Config) redrive.KinesisHandler
	lambda lambdaAPI
	byFn   map[string]redrive.KinesisHandler
}

// handler is the ingest handler for a batch function gave up.
func (b *ingestByFunction) handler(ctx context.Context, function string) (redrive.KinesisHandler, error) {
	if h, ok := b.byFn[function]; ok {
		return h, nil
	}
	cfg := b.cfg
	if b.from == tenantsFromFunction {
		t, err := b.functionTenants(ctx, function)
		if err != nil {
			return nil, err
		}
		cfg.Tenants = t
	}
	h := b.new(cfg)
	if b.byFn == nil {
		b.byFn = map[string]redrive.KinesisHandler{}
	}
	b.byFn[function] = h
	return h, nil
}

// functionTenants reads the tenants from the function's environment, and
// checks that it writes the table this run writes.
func (b *ingestByFunction) functionTenants(ctx context.Context, function string) (*tenant.Config, error) {
	if function == "" {
		return nil, fmt.Errorf("Lambda's record names no function, so its tenants cannot be read; give --tenants %s with TENANTS and TENANT_STREAMS set as the ingest function has them", tenantsFromEnv)
	}
	out, err := b.lambda.GetFunctionConfiguration(ctx, &lambda.GetFunctionConfigurationInput{FunctionName: &function})
	if err != nil {
		return nil, fmt.Errorf("read the tenants of ingest function %s (lambda:GetFunctionConfiguration; or give --tenants %s with TENANTS and TENANT_STREAMS set as the function has them): %w", function, tenantsFromEnv, err)
	}
	vars := map[string]string{}
	if out.Environment != nil {
		vars = out.Environment.Variables
	}
	if t := vars[ingest.EnvTable]; t != "" && t != b.cfg.Table {
		return nil, fmt.Errorf("ingest function %s writes table %s, and this run table %s: set EVENTS_TABLE (or -table) to the function's", function, t, b.cfg.Table)
	}
	t, err := tenant.FromEnv(func(k string) string { return vars[k] })
	if err != nil {
		return nil, fmt.Errorf("ingest function %s: %w", function, err)
	}
	return t, nil
}
