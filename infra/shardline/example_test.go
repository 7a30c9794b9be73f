package shardline_test

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"

	"github.com/shardline/shardline/infra/shardline"
)

// A pipeline in a stack of your own: a source you know is hot gets a floor
// of shards, events are kept 90 days in the table, and the archive keeps
// them for two years. CodeDir is where `make build` writes the functions
// (bin/ by default); here, stand-ins. The stack holds the table, the
// stream, the five functions (ingest, query, counter, the counters'
// scheduled fold, archive), their three event source mappings (the stream
// to ingest, the table's stream to the counter and the archive), the
// fold's schedule, the HTTP API, and three buckets (the archive,
// the batches Lambda gave up on, and the archive's access logs).
func ExampleNewPipeline() {
	code, _ := os.MkdirTemp("", "shardline-bin")
	defer os.RemoveAll(code)
	for _, fn := range []string{"ingest", "query", "counter", "countfold", "archive"} {
		os.MkdirAll(filepath.Join(code, fn), 0o755)
		os.WriteFile(filepath.Join(code, fn, "bootstrap"), []byte(fn), 0o755)
	}

	app := awscdk.NewApp(nil)
	stack := awscdk.NewStack(app, jsii.String("Events"), nil)
	p := shardline.NewPipeline(stack, "Pipeline", &shardline.Props{
		CodeDir:           code,
		ShardOverrides:    map[string]int{"checkout": 16},
		RetentionDays:     90,
		ArchiveExpiryDays: 730,
	})
	_ = p.API // the HTTP API; p.Table, p.Stream and the functions are fields too

	// What the stack holds, by resource type.
	tpl := assertions.Template_FromStack(stack, nil).ToJSON()
	count := map[string]int{}
	for _, r := range (*tpl)["Resources"].(map[string]any) {
		count[r.(map[string]any)["Type"].(string)]++
	}
	var types []string
	for _, typ := range []string{"AWS::DynamoDB::Table", "AWS::Kinesis::Stream", "AWS::Lambda::Function", "AWS::Lambda::EventSourceMapping", "AWS::Events::Rule", "AWS::ApiGatewayV2::Api", "AWS::S3::Bucket"} {
		types = append(types, fmt.Sprintf("%s: %d", typ, count[typ]))
	}
	sort.Strings(types)
	for _, t := range types {
		fmt.Println(t)
	}
	// Output:
	// AWS::ApiGatewayV2::Api: 1
	// AWS::DynamoDB::Table: 1
	// AWS::Events::Rule: 1
	// AWS::Kinesis::Stream: 1
	// AWS::Lambda::EventSourceMapping: 3
	// AWS::Lambda::Function: 5
	// AWS::S3::Bucket: 3
}
