// Command infra is shardline's CDK app: one stack holding the Pipeline
// construct, configured from context (see shardline.PropsFromContext and
// docs/configuration.md) and checked by cdk-nag's AwsSolutions rules at synth. cdk.json runs
// it; `make synth` and `make deploy` call the CDK CLI.
package main

import (
	"fmt"
	"os"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"

	"github.com/shardline/shardline/infra/shardline"
)

func main() {
	defer jsii.Close()
	app := awscdk.NewApp(nil)
	name := "Shardline"
	if v := app.Node().TryGetContext(jsii.String("shardline:stackName")); v != nil {
		name = fmt.Sprint(v)
	}
	props, err := shardline.PropsFromContext(app.Node())
	if err == nil {
		err = props.Validate()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "shardline:", err)
		os.Exit(1)
	}
	stack := awscdk.NewStack(app, jsii.String(name), &awscdk.StackProps{
		Description: jsii.String("shardline: sharded event ingestion on DynamoDB"),
		Env: &awscdk.Environment{
			Account: env("CDK_DEFAULT_ACCOUNT"),
			Region:  env("CDK_DEFAULT_REGION"),
		},
	})
	shardline.NewPipeline(stack, "Pipeline", &props)
	awscdk.Aspects_Of(app).Add(cdknag.NewAwsSolutionsChecks(&cdknag.NagPackProps{Verbose: jsii.Bool(true)}), nil)
	app.Synth(nil)
}

// env is the variable's value, or nil (environment-agnostic) when unset.
func env(name string) *string {
	if v := os.Getenv(name); v != "" {
		return &v
	}
	return nil
}
