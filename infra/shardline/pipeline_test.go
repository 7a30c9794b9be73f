package shardline

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/cxapi"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"

	"github.com/shardline/shardline/internal/archive"
	"github.com/shardline/shardline/internal/counts"
	"github.com/shardline/shardline/internal/ingest"
	"github.com/shardline/shardline/internal/query"
	"github.com/shardline/shardline/internal/schema"
	"github.com/shardline/shardline/internal/tenant"
	"github.com/shardline/shardline/local/devserver"
)

func TestMain(m *testing.M) {
	// Node 20 runs jsii fine; its end-of-life banner and CDK's deprecation
	// notices would only bury the test output (the Makefile sets the same).
	os.Setenv("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
	os.Setenv("JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION", "1")
	os.Setenv("JSII_DEPRECATED", "quiet")
	code := m.Run()
	jsii.Close()
	os.Exit(code)
}

// codeDir stands in for `make build`'s output: the template refers to the
// assets by hash, and these tests look at the template, not the binaries.
func codeDir(t *testing.T) string {
	dir := t.TempDir()
	for _, fn := range []string{"ingest", "query", "counter", "countfold", "archive"} {
		os.MkdirAll(filepath.Join(dir, fn), 0o755)
		os.WriteFile(filepath.Join(dir, fn, "bootstrap"), []byte(fn), 0o755)
	}
	return dir
}

type synth struct {
	stack awscdk.Stack
	tpl   map[string]any
}

func synthesize(t *testing.T, props *Props, context map[string]any) synth {
	t.Helper()
	var ctx *map[string]any
	if context != nil {
		ctx = &context
	}
	app := awscdk.NewApp(&awscdk.AppProps{Context: ctx})
	stack := awscdk.NewStack(app, jsii.String("S"), nil)
	if props == nil {
		p, err := PropsFromContext(app.Node())
		if err != nil {
			t.Fatal(err)
		}
		props = &p
	}
	props.CodeDir = codeDir(t)
	NewPipeline(stack, "P", props)
	return synthOf(t, app, stack)
}

// synthOf checks the app with cdk-nag and reads the stack's template.
func synthOf(t *testing.T, app awscdk.App, stack awscdk.Stack) synth {
	t.Helper()
	awscdk.Aspects_Of(app).Add(cdknag.NewAwsSolutionsChecks(&cdknag.NagPackProps{Verbose: jsii.Bool(true)}), nil)
	tpl := assertions.Template_FromStack(stack, nil)
	b, _ := json.Marshal(tpl.ToJSON())
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return synth{stack, m}
}

func (s synth) resources(typ string) map[string]map[string]any {
	out := map[string]map[string]any{}
	for id, r := range s.tpl["Resources"].(map[string]any) {
		r := r.(map[string]any)
		if r["Type"] == typ {
			out[id] = r
		}
	}
	return out
}

func (s synth) one(t *testing.T, typ string) map[string]any {
	t.Helper()
	rs := s.resources(typ)
	if len(rs) != 1 {
		t.Fatalf("%d resources of type %s, want 1", len(rs), typ)
	}
	for _, r := range rs {
		return r
	}
	return nil
}

func props(r map[string]any) map[string]any { return r["Properties"].(map[string]any) }

// mapping is the properties of the one event source mapping from the
// Kinesis "Stream", or from the table's stream to the counter ("Events")
// or to the archive ("Archive").
func (s synth) mapping(t *testing.T, from string) map[string]any {
	t.Helper()
	var found []map[string]any
	for _, m := range s.resources("AWS::Lambda::EventSourceMapping") {
		b, _ := json.Marshal(props(m)["EventSourceArn"])
		fn, _ := json.Marshal(props(m)["FunctionName"])
		table := strings.Contains(string(b), "StreamArn")
		switch {
		case !table && from == "Stream",
			table && from == "Events" && strings.Contains(string(fn), "PCounter"),
			table && from == "Archive" && strings.Contains(string(fn), "PArchive"):
			found = append(found, props(m))
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d event source mappings from %s, want 1", len(found), from)
	}
	return found[0]
}

// jsonOf re-encodes v so that differently typed equal values compare equal.
func jsonOf(t *testing.T, v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	json.Unmarshal(b, &out)
	return out
}

var defaults synth

func defaultSynth(t *testing.T) synth {
	if defaults.tpl == nil {
		defaults = synthesize(t, &Props{}, nil)
	}
	return defaults
}

// TestTableIsTheSchema: the stack's table and GSI are the ones the local run
// creates from internal/schema, attribute for attribute, with either GSI
// projection.
func TestTableIsTheSchema(t *testing.T) {
	checkTable(t, defaultSynth(t), schema.Full)
	checkTable(t, synthesize(t, &Props{GSIProjection: "lean"}, nil), schema.Lean)
}

func checkTable(t *testing.T, s synth, projection schema.Projection) {
	table := s.one(t, "AWS::DynamoDB::Table")
	p := props(table)
	want := schema.CreateTableInputWith("x", projection)
	if got, w := jsonOf(t, p["KeySchema"]), jsonOf(t, want.KeySchema); !reflect.DeepEqual(got, w) {
		t.Errorf("KeySchema %v, want %v", got, w)
	}
	sortDefs := func(v any) any {
		l := v.([]any)
		sort.Slice(l, func(i, j int) bool {
			return l[i].(map[string]any)["AttributeName"].(string) < l[j].(map[string]any)["AttributeName"].(string)
		})
		return l
	}
	if got, w := sortDefs(jsonOf(t, p["AttributeDefinitions"])), sortDefs(jsonOf(t, want.AttributeDefinitions)); !reflect.DeepEqual(got, w) {
		t.Errorf("AttributeDefinitions %v, want %v", got, w)
	}
	gsis := p["GlobalSecondaryIndexes"].([]any)
	if len(gsis) != 1 {
		t.Fatalf("%d GSIs", len(gsis))
	}
	g := gsis[0].(map[string]any)
	delete(g, "ContributorInsightsSpecification")
	wg := jsonOf(t, want.GlobalSecondaryIndexes[0]).(map[string]any)
	for k, v := range wg {
		if v == nil {
			delete(wg, k)
		}
	}
	if !reflect.DeepEqual(g, wg) {
		t.Errorf("GSI %v, want %v", g, wg)
	}
	checks := map[string]any{
		"BillingMode":                      "PAY_PER_REQUEST",
		"DeletionProtectionEnabled":        true,
		"TimeToLiveSpecification":          map[string]any{"AttributeName": schema.TTL, "Enabled": true},
		"PointInTimeRecoverySpecification": map[string]any{"PointInTimeRecoveryEnabled": true},
		"ContributorInsightsSpecification": map[string]any{"Enabled": true},
	}
	for k, v := range checks {
		if !reflect.DeepEqual(p[k], v) {
			t.Errorf("%s = %v, want %v", k, p[k], v)
		}
	}
	if table["DeletionPolicy"] != "Retain" || table["UpdateReplacePolicy"] != "Retain" {
		t.Errorf("the table is not retained on delete: %v %v", table["DeletionPolicy"], table["UpdateReplacePolicy"])
	}
}

// TestFunctionEnvironmentIsWhatTheCodeReads: each function is given exactly
// the variables its code reads, and they parse.
func TestFunctionEnvironmentIsWhatTheCodeReads(t *testing.T) {
	s := defaultSynth(t)
	fns := s.resources("AWS::Lambda::Function")
	if len(fns) != 5 {
		t.Fatalf("%d functions, want ingest, query, counter, countfold and archive", len(fns))
	}
	for id, fn := range fns {
		p := props(fn)
		if p["Runtime"] != "provided.al2023" || !reflect.DeepEqual(p["Architectures"], []any{"arm64"}) || p["Handler"] != "bootstrap" ||
			!reflect.DeepEqual(p["TracingConfig"], map[string]any{"Mode": "Active"}) || p["LoggingConfig"] == nil {
			t.Errorf("%s: runtime %v, arch %v, handler %v, tracing %v, logging %v", id, p["Runtime"], p["Architectures"], p["Handler"], p["TracingConfig"], p["LoggingConfig"])
		}
		vars := p["Environment"].(map[string]any)["Variables"].(map[string]any)
		var got []string
		for k := range vars {
			got = append(got, k)
		}
		sort.Strings(got)
		want := append([]string(nil), query.EnvVars...)
		if strings.HasPrefix(id, "PCounter") {
			want = append([]string(nil), counts.EnvVars...)
		}
		if strings.HasPrefix(id, "PCountFold") {
			want = append([]string(nil), counts.FoldEnvVars...)
		}
		if strings.HasPrefix(id, "PArchive") {
			want = append([]string(nil), archive.EnvVars...)
		}
		if strings.HasPrefix(id, "PIngest") {
			want = append([]string(nil), ingest.EnvVars...)
			env := map[string]string{}
			for k, v := range vars {
				if s, ok := v.(string); ok {
					env[k] = s
				} else {
					env[k] = "table-from-a-token"
				}
			}
			if _, err := ingest.ConfigFromEnv(func(k string) string { return env[k] }); err != nil {
				t.Errorf("the ingest environment does not parse: %v", err)
			}
		}
		// The tenant variables the code lists are set only with tenants
		// (tenants_test.go).
		want = slices.DeleteFunc(want, func(v string) bool {
			return v == tenant.EnvTenants || v == tenant.EnvStreams || v == tenant.EnvRoles
		})
		sort.Strings(want)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s environment %v, want exactly %v", id, got, want)
		}
	}
}

func TestEventSourceMapping(t *testing.T) {
	s := defaultSynth(t)
	p := s.mapping(t, "Stream")
	want := map[string]any{
		"BisectBatchOnFunctionError":     true,
		"FunctionResponseTypes":          []any{"ReportBatchItemFailures"},
		"MaximumRetryAttempts":           float64(10),
		"MaximumRecordAgeInSeconds":      float64(6 * 3600),
		"BatchSize":                      float64(500),
		"MaximumBatchingWindowInSeconds": float64(1),
		"ParallelizationFactor":          float64(2),
		"StartingPosition":               "TRIM_HORIZON",
	}
	for k, v := range want {
		if !reflect.DeepEqual(p[k], v) {
			t.Errorf("%s = %v, want %v", k, p[k], v)
		}
	}
	givesUpToTheBucket(t, s, "Ingest", p)
	k := props(s.one(t, "AWS::Kinesis::Stream"))
	if !reflect.DeepEqual(k["StreamModeDetails"], map[string]any{"StreamMode": "ON_DEMAND"}) ||
		!reflect.DeepEqual(k["StreamEncryption"], map[string]any{"EncryptionType": "KMS", "KeyId": "alias/aws/kinesis"}) {
		t.Errorf("stream %v", k)
	}
}

// givesUpToTheBucket: mapping m (of function fn) has bounded retries,
// bisection and a record age under the stream's 24 hours, sends what it
// gives up on to the FailedBatches bucket, counts what it sends there, and
// has an alarm on that count; fn's role may put objects there, under
// aws/lambda/, and list it, nothing more, and the bucket's policy keeps it
// to its own mapping's aws/lambda/<id>/.
func givesUpToTheBucket(t *testing.T, s synth, fn string, m map[string]any) {
	t.Helper()
	retries, _ := m["MaximumRetryAttempts"].(float64)
	age, _ := m["MaximumRecordAgeInSeconds"].(float64)
	if retries < 0 || retries > 10000 || m["MaximumRetryAttempts"] == nil || age <= 0 || age > 23*3600 || m["BisectBatchOnFunctionError"] != true {
		t.Errorf("%s: retries %v, record age %v, bisect %v: want bounded retries, bisection and a record age under the stream's retention",
			fn, m["MaximumRetryAttempts"], m["MaximumRecordAgeInSeconds"], m["BisectBatchOnFunctionError"])
	}
	var bucket string
	for id := range s.resources("AWS::S3::Bucket") {
		if strings.HasPrefix(id, "PFailedBatches") {
			bucket = id
		}
	}
	dest, _ := json.Marshal(m["DestinationConfig"])
	if bucket == "" || string(dest) != `{"OnFailure":{"Destination":{"Fn::GetAtt":["`+bucket+`","Arn"]}}}` {
		t.Errorf("%s: on-failure destination %s, want the FailedBatches bucket", fn, dest)
	}
	if mc, _ := json.Marshal(m["MetricsConfig"]); string(mc) != `{"Metrics":["EventCount"]}` {
		t.Errorf("%s: metrics %s, want EventCount (OnFailureDestinationDeliveredEventCount)", fn, mc)
	}
	var mappingID string
	for id, r := range s.resources("AWS::Lambda::EventSourceMapping") {
		if reflect.DeepEqual(props(r), m) {
			mappingID = id
		}
	}
	found := false
	for id, a := range s.resources("AWS::CloudWatch::Alarm") {
		if !strings.HasPrefix(id, "P"+fn+"GivenUpAlarm") {
			continue
		}
		found = true
		p := props(a)
		dims, _ := json.Marshal(p["Dimensions"])
		if p["MetricName"] != "OnFailureDestinationDeliveredEventCount" || p["Namespace"] != "AWS/Lambda" || p["Period"] != float64(60) ||
			p["Statistic"] != "Sum" || p["Threshold"] != float64(0) || p["ComparisonOperator"] != "GreaterThanThreshold" ||
			string(dims) != `[{"Name":"EventSourceMappingUUID","Value":{"Ref":"`+mappingID+`"}}]` {
			t.Errorf("%s: %v", id, p)
		}
	}
	if !found {
		t.Errorf("no %sGivenUpAlarm", fn)
	}
	confined := false
	for _, st := range s.bucketPolicy(t, bucket) {
		st := st.(map[string]any)
		nr, _ := json.Marshal(st["NotResource"])
		cond, _ := json.Marshal(st["Condition"])
		confined = confined || st["Effect"] == "Deny" && st["Action"] == "s3:PutObject" &&
			strings.Contains(string(nr), `"/aws/lambda/",{"Ref":"`+mappingID+`"},"/*"`) &&
			strings.HasPrefix(string(cond), `{"ArnEquals":{"aws:PrincipalArn":{"Fn::GetAtt":["P`+fn+`Role`)
	}
	if !confined {
		t.Errorf("%s: the bucket policy does not keep its role to its own mapping's prefix", fn)
	}
	var grants []string
	for id, pol := range s.resources("AWS::IAM::Policy") {
		if !strings.HasPrefix(id, "P"+fn) {
			continue
		}
		for _, st := range props(pol)["PolicyDocument"].(map[string]any)["Statement"].([]any) {
			st := st.(map[string]any)
			res, _ := json.Marshal(st["Resource"])
			if strings.Contains(string(res), bucket) {
				grants = append(grants, fmt.Sprint(st["Action"])+" "+string(res))
			}
		}
	}
	sort.Strings(grants)
	want := []string{
		`s3:ListBucket {"Fn::GetAtt":["` + bucket + `","Arn"]}`,
		`s3:PutObject {"Fn::Join":["",[{"Fn::GetAtt":["` + bucket + `","Arn"]},"/aws/lambda/*"]]}`,
	}
	if !reflect.DeepEqual(grants, want) {
		t.Errorf("%s: grants on the FailedBatches bucket\n%s\nwant exactly\n%s", fn, strings.Join(grants, "\n"), strings.Join(want, "\n"))
	}
}

// TestNoBatchStallsAStream: every event source mapping gives up to one
// bucket, which keeps what it holds at least 7 days (FailedBatchRetentionDays,
// 14 by default), encrypted and private; the created stream keeps its
// default retention, and an existing one is read as it is; records lost on
// the way to the bucket alarm too. There is no queue.
func TestNoBatchStallsAStream(t *testing.T) {
	s := defaultSynth(t)
	if n := len(s.resources("AWS::Lambda::EventSourceMapping")); n != 3 {
		t.Fatalf("%d event source mappings, want ingest's, the counter's and the archive's", n)
	}
	if n := len(s.resources("AWS::SQS::Queue")); n != 0 {
		t.Errorf("%d queues", n)
	}
	if hours, ok := props(s.one(t, "AWS::Kinesis::Stream"))["RetentionPeriodHours"]; ok && hours != float64(24) {
		t.Errorf("stream retention %v h, want the default 24", hours)
	}
	expiry := func(s synth) any {
		for id, b := range s.resources("AWS::S3::Bucket") {
			if strings.HasPrefix(id, "PFailedBatches") {
				rules := props(b)["LifecycleConfiguration"].(map[string]any)["Rules"].([]any)
				return rules[0].(map[string]any)["ExpirationInDays"]
			}
		}
		t.Fatal("no FailedBatches bucket")
		return nil
	}
	if d := expiry(s); d != float64(DefaultFailedBatchRetentionDays) || DefaultFailedBatchRetentionDays < 7 {
		t.Errorf("failed batches expire after %v days", d)
	}
	if d := expiry(synthesize(t, nil, map[string]any{CtxFailedBatchRetentionDays: "7"})); d != float64(7) {
		t.Errorf("FailedBatchRetentionDays 7: expire after %v days", d)
	}

	lost := false
	for id, a := range s.resources("AWS::CloudWatch::Alarm") {
		if strings.HasPrefix(id, "PFailedBatchesLostAlarm") {
			lost = true
			b, _ := json.Marshal(props(a)["Metrics"])
			if strings.Count(string(b), `"MetricName":"DestinationDeliveryFailures"`) != 3 || strings.Count(string(b), `"MetricName":"DroppedEventCount"`) != 3 {
				t.Errorf("lost alarm %s", b)
			}
		}
	}
	if !lost {
		t.Error("no FailedBatchesLostAlarm")
	}
	outs := s.tpl["Outputs"].(map[string]any)
	for _, o := range []string{"FailedBatchesBucket", "IngestMappingId", "CounterMappingId", "ArchiveMappingId"} {
		if outs[o] == nil {
			t.Errorf("no output %s", o)
		}
	}

	arn := "arn:aws:kinesis:us-east-1:000000000000:stream/existing"
	s = synthesize(t, &Props{StreamARN: arn, MaxRecordAge: 72 * time.Hour}, nil)
	if n := len(s.resources("AWS::Kinesis::Stream")); n != 0 {
		t.Fatalf("%d streams created beside the existing one", n)
	}
	m := s.mapping(t, "Stream")
	if m["EventSourceArn"] != arn || m["MaximumRecordAgeInSeconds"] != float64(72*3600) {
		t.Errorf("existing stream: %v, record age %v", m["EventSourceArn"], m["MaximumRecordAgeInSeconds"])
	}
}

// TestEveryRouteNeedsIAM: the three routes exist, each with IAM
// authorization and its own throttle; the stage writes access logs.
func TestEveryRouteNeedsIAM(t *testing.T) {
	s := defaultSynth(t)
	routes := s.resources("AWS::ApiGatewayV2::Route")
	var keys []string
	for _, r := range routes {
		p := props(r)
		keys = append(keys, p["RouteKey"].(string))
		if p["AuthorizationType"] != "AWS_IAM" {
			t.Errorf("route %v has authorization %v", p["RouteKey"], p["AuthorizationType"])
		}
	}
	sort.Strings(keys)
	if want := []string{"GET /v1/counts", "GET /v1/events", "GET /v1/quarantine", "GET /v1/sources", "POST /v1/events"}; !reflect.DeepEqual(keys, want) {
		t.Fatalf("routes %v, want %v", keys, want)
	}
	stage := props(s.one(t, "AWS::ApiGatewayV2::Stage"))
	settings := stage["RouteSettings"].(map[string]any)
	for _, k := range keys {
		rs, ok := settings[k].(map[string]any)
		if !ok || rs["ThrottlingRateLimit"] == nil || rs["ThrottlingBurstLimit"] == nil {
			t.Errorf("route %s has no throttle: %v", k, settings[k])
		}
	}
	if al, ok := stage["AccessLogSettings"].(map[string]any); !ok || al["DestinationArn"] == nil || !strings.Contains(al["Format"].(string), "$context.requestId") {
		t.Errorf("access logs %v", stage["AccessLogSettings"])
	}
}

// TestIAMIsLeastPrivilege: ingest may only write (and read its shard
// records), query may only read; DynamoDB statements name the table or its
// index, never a wildcard; the only wildcard resource is X-Ray's.
func TestIAMIsLeastPrivilege(t *testing.T) {
	s := defaultSynth(t)
	allowed := map[string]map[string]bool{
		"Ingest": {"dynamodb:BatchWriteItem": true, "dynamodb:PutItem": true, "dynamodb:GetItem": true, "dynamodb:BatchGetItem": true, "dynamodb:UpdateItem": true},
		"Query":  {"dynamodb:Query": true, "dynamodb:GetItem": true, "dynamodb:BatchGetItem": true},
		"Counter": {"dynamodb:PutItem": true, "dynamodb:Query": true, "dynamodb:UpdateItem": true, "dynamodb:BatchGetItem": true, "dynamodb:ListStreams": true,
			"dynamodb:DescribeStream": true, "dynamodb:GetRecords": true, "dynamodb:GetShardIterator": true},
		"CountFold": {"dynamodb:GetItem": true, "dynamodb:PutItem": true, "dynamodb:UpdateItem": true, "dynamodb:Query": true},
		"Archive":   {"dynamodb:ListStreams": true, "dynamodb:DescribeStream": true, "dynamodb:GetRecords": true, "dynamodb:GetShardIterator": true},
	}
	// The key spaces each function may touch item by item.
	spaces := map[string]map[string][]string{
		"Ingest":    {"dynamodb:GetItem": {"M#*"}, "dynamodb:BatchGetItem": {"M#*"}, "dynamodb:PutItem": {"M#*", "S#*"}, "dynamodb:UpdateItem": {"M#*"}},
		"Query":     {"dynamodb:GetItem": {"M#*", "C##*"}},
		"Counter":   {"dynamodb:PutItem": {"C#*"}, "dynamodb:Query": {"C#*"}, "dynamodb:UpdateItem": {"C#*"}, "dynamodb:BatchGetItem": {"C#*"}},
		"CountFold": {"dynamodb:GetItem": {"C#*"}, "dynamodb:PutItem": {"C#*"}, "dynamodb:UpdateItem": {"C#*"}, "dynamodb:Query": {"C#*"}},
	}
	// BatchGetItem: the query function's, once, on days' shard records and
	// hour indexes (M#), and with a lean GSI on events (E#) too; the
	// counter's, on counter items (C#, the switch-over's guard), and the
	// ingest function's, on shard records and hour indexes (M#, a batch's
	// first-of-day reads), checked with the key spaces below.
	for _, c := range []struct {
		synth  synth
		spaces string
	}{{s, `["M#*"]`}, {synthesize(t, &Props{GSIProjection: "lean"}, nil), `["M#*","E#*"]`}} {
		batchGets := 0
		for id, pol := range c.synth.resources("AWS::IAM::Policy") {
			b, _ := json.Marshal(pol)
			if strings.Contains(string(b), "dynamodb:BatchGetItem") && !strings.HasPrefix(id, "PCounter") && !strings.HasPrefix(id, "PIngest") {
				if !strings.HasPrefix(id, "PQuery") || !strings.Contains(string(b), `"dynamodb:LeadingKeys":`+c.spaces) {
					t.Errorf("%s: BatchGetItem not limited to the query function's reads of %s: %s", id, c.spaces, b)
				}
				batchGets++
			}
		}
		if batchGets != 1 {
			t.Errorf("BatchGetItem granted %d times, want once (%s)", batchGets, c.spaces)
		}
	}
	for id, pol := range s.resources("AWS::IAM::Policy") {
		fn := "Query"
		if strings.HasPrefix(id, "PIngest") {
			fn = "Ingest"
		}
		if strings.HasPrefix(id, "PCounter") {
			fn = "Counter"
		}
		if strings.HasPrefix(id, "PCountFold") {
			fn = "CountFold"
		}
		if strings.HasPrefix(id, "PArchive") {
			fn = "Archive"
		}
		for _, st := range props(pol)["PolicyDocument"].(map[string]any)["Statement"].([]any) {
			st := st.(map[string]any)
			var actions []string
			switch a := st["Action"].(type) {
			case string:
				actions = []string{a}
			case []any:
				for _, x := range a {
					actions = append(actions, x.(string))
				}
			}
			res, _ := json.Marshal(st["Resource"])
			for _, a := range actions {
				if strings.Contains(a, "*") {
					t.Errorf("%s: wildcard action %s", id, a)
				}
				if strings.HasPrefix(a, "dynamodb:") {
					if !allowed[fn][a] {
						t.Errorf("%s function may %s", fn, a)
					}
					if (strings.Contains(string(res), `"*"`) && a != "dynamodb:ListStreams") || !strings.Contains(string(res), "PEvents") && a != "dynamodb:ListStreams" {
						t.Errorf("%s: %s on %s, not the table", id, a, res)
					}
					if want, ok := spaces[fn][a]; ok {
						cond, _ := json.Marshal(st["Condition"])
						if !oneOf(string(cond), want) {
							t.Errorf("%s: %s not limited to the key spaces %v: %s", id, a, want, cond)
						}
					}
				}
				// ListStreams takes no resource; it names no table either.
				if string(res) == `"*"` && !strings.HasPrefix(a, "xray:") && a != "dynamodb:ListStreams" {
					t.Errorf("%s: %s on every resource", id, a)
				}
			}
		}
	}
}

// oneOf: cond limits leading keys to exactly one of prefixes.
func oneOf(cond string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.Contains(cond, `"`+p+`"`) && strings.Count(cond, "#*") == 1 {
			return true
		}
	}
	return false
}

func TestAlarmsDashboardOutputs(t *testing.T) {
	s := defaultSynth(t)
	alarms := s.resources("AWS::CloudWatch::Alarm")
	metrics := map[string]bool{}
	for _, a := range alarms {
		if m, ok := props(a)["MetricName"].(string); ok {
			metrics[m] = true
		}
	}
	for _, m := range []string{"IteratorAge", "Errors", "Throttles", "WriteThrottleEvents", "OnFailureDestinationDeliveredEventCount", "5xx"} {
		if !metrics[m] {
			t.Errorf("no alarm on %s", m)
		}
	}
	if len(alarms) != 19 {
		t.Errorf("%d alarms, want 19", len(alarms))
	}
	s.one(t, "AWS::CloudWatch::Dashboard")
	outs := s.tpl["Outputs"].(map[string]any)
	for _, o := range []string{"ApiUrl", "StreamName", "TableName"} {
		if outs[o] == nil {
			t.Errorf("no output %s in %v", o, outs)
		}
	}
}

// TestNoUnsuppressedNagFindings: cdk-nag's AwsSolutions pack finds nothing
// that is not suppressed with a reason in code.
func TestNoUnsuppressedNagFindings(t *testing.T) {
	noNagFindings(t, defaultSynth(t))
	noNagFindings(t, synthesize(t, &Props{GSIProjection: "lean", ArchiveExpiryDays: 400}, nil))
}

func noNagFindings(t *testing.T, s synth) {
	t.Helper()
	an := assertions.Annotations_FromStack(s.stack)
	match := assertions.Match_StringLikeRegexp(jsii.String("AwsSolutions-.*"))
	for _, msgs := range []*[]*cxapi.SynthesisMessage{an.FindError(jsii.String("*"), match), an.FindWarning(jsii.String("*"), match)} {
		for _, m := range *msgs {
			t.Errorf("%s: %v", *m.Id, m.Entry.Data)
		}
	}
}

// TestContextOverrides: context keys reach the functions' environment and
// the stack; an existing stream replaces the new one.
func TestContextOverrides(t *testing.T) {
	arn := "arn:aws:kinesis:us-east-1:000000000000:stream/existing"
	s := synthesize(t, nil, map[string]any{
		CtxShards: "8", CtxShardOverrides: `{"hot/src": 64}`, CtxGSIShards: 2, CtxRetentionDays: "7",
		CtxIngestMemoryMB: "1024", CtxStreamARN: arn, CtxLogLevel: "debug", CtxGSICopies: "where-it-pays",
	})
	if n := len(s.resources("AWS::Kinesis::Stream")); n != 0 {
		t.Errorf("%d streams created beside the existing one", n)
	}
	if got := s.mapping(t, "Stream")["EventSourceArn"]; got != arn {
		t.Errorf("ESM reads %v, want %s", got, arn)
	}
	for id, fn := range s.resources("AWS::Lambda::Function") {
		if !strings.HasPrefix(id, "PIngest") {
			continue
		}
		p := props(fn)
		vars := p["Environment"].(map[string]any)["Variables"].(map[string]any)
		want := map[string]string{ingest.EnvShards: "8", ingest.EnvShardOverrides: `{"hot/src":64}`, ingest.EnvGSIShards: "2",
			ingest.EnvRetentionDays: "7", ingest.EnvLogLevel: "debug", ingest.EnvGSICopies: "where-it-pays"}
		for k, v := range want {
			if vars[k] != v {
				t.Errorf("%s = %v, want %s", k, vars[k], v)
			}
		}
		if p["MemorySize"] != float64(1024) {
			t.Errorf("memory %v", p["MemorySize"])
		}
	}
}

func TestBadPropsFailAtSynth(t *testing.T) {
	for _, p := range []Props{{Shards: 5000}, {RetentionDays: -1}, {LogLevel: "loud"}, {BatchSize: 20000}, {GSIProjection: "keys"}, {GSICopies: "never"},
		{MaxRecordAge: 24 * time.Hour}, {FailedBatchRetentionDays: 6}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("props %+v accepted", p)
				}
			}()
			app := awscdk.NewApp(nil)
			NewPipeline(awscdk.NewStack(app, jsii.String("S"), nil), "P", &p)
		}()
	}
	for key, v := range map[string]any{CtxShards: "many", CtxArchive: "maybe", CtxFailedBatchRetentionDays: "a week"} {
		app := awscdk.NewApp(&awscdk.AppProps{Context: &map[string]any{key: v}})
		if _, err := PropsFromContext(app.Node()); err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("bad context %s=%v: %v", key, v, err)
		}
	}
}

// TestCounterMapping: the table streams new images to the counter function,
// which sees only inserted events, with a tumbling window (for the shard
// id) and a batching window that bounds counter heat; a batch that cannot
// succeed is given up on to the FailedBatches bucket, from which
// `shardline redrive` counts what it had not counted.
func TestCounterMapping(t *testing.T) {
	s := defaultSynth(t)
	tbl := props(s.one(t, "AWS::DynamoDB::Table"))
	if !reflect.DeepEqual(tbl["StreamSpecification"], map[string]any{"StreamViewType": "NEW_IMAGE"}) {
		t.Errorf("table stream %v", tbl["StreamSpecification"])
	}
	p := s.mapping(t, "Events")
	want := map[string]any{
		"BatchSize":                      float64(CounterBatchSize),
		"MaximumBatchingWindowInSeconds": float64(CounterBatchingWindow),
		"TumblingWindowInSeconds":        float64(CounterTumblingWindow),
		"ParallelizationFactor":          float64(1),
		"StartingPosition":               "TRIM_HORIZON",
	}
	for k, v := range want {
		if !reflect.DeepEqual(p[k], v) {
			t.Errorf("%s = %v, want %v", k, p[k], v)
		}
	}
	givesUpToTheBucket(t, s, "Counter", p)
	f, _ := json.Marshal(p["FilterCriteria"])
	if !strings.Contains(string(f), `\"eventName\":[\"INSERT\"]`) || !strings.Contains(string(f), `{\"prefix\":\"E#\"}`) {
		t.Errorf("filter %s", f)
	}
	alarms := map[string]bool{}
	for id := range s.resources("AWS::CloudWatch::Alarm") {
		alarms[id] = true
	}
	for _, a := range []string{"CounterIteratorAgeAlarm", "CounterErrorsAlarm"} {
		found := false
		for id := range alarms {
			found = found || strings.Contains(id, a)
		}
		if !found {
			t.Errorf("no %s", a)
		}
	}
}

// TestLocalRunGivesUpAsTheStackDoes: make run's pollers give a failing
// batch up as the stack's mappings do, so that what fails and is redriven
// locally is what the stack sets aside.
func TestLocalRunGivesUpAsTheStackDoes(t *testing.T) {
	for _, c := range []struct {
		what        string
		local, prod any
	}{
		{"Kinesis retries", devserver.LocalRetryAttempts, DefaultRetryAttempts},
		{"Kinesis record age", devserver.LocalMaxRecordAge, DefaultMaxRecordAge},
		{"table stream retries", devserver.LocalStreamRetryAttempts, StreamRetryAttempts},
		{"table stream record age", devserver.LocalStreamMaxRecordAge, StreamMaxRecordAge},
	} {
		if c.local != c.prod {
			t.Errorf("%s: %v locally, %v in the stack", c.what, c.local, c.prod)
		}
	}
}
