package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/shardline/shardline/internal/schema"
	"github.com/shardline/shardline/internal/tenant"
	"github.com/shardline/shardline/ops/onfailure"
	"github.com/shardline/shardline/testkit/testddb"
	"github.com/shardline/shardline/testkit/tests3"
)

// fakeLambda stands in for Lambda's control plane, which has no local
// engine: it answers GetFunctionConfiguration (GET
// /2015-03-31/functions/{name}/configuration, the REST JSON the SDK
// sends) with the environment set for the function named, and an
// AccessDeniedException (403) for any other, as Lambda answers a caller
// not allowed the function. It notes each request as the IAM call it is.
type fakeLambda struct {
	URL   string
	mu    sync.Mutex
	env   map[string]map[string]string // function name → variables
	calls []awsCall
}

func newFakeLambda(t *testing.T) *fakeLambda {
	t.Helper()
	l := &fakeLambda{env: map[string]map[string]string{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		path, err := url.PathUnescape(r.URL.EscapedPath())
		name, ok := strings.CutSuffix(strings.TrimPrefix(path, "/2015-03-31/functions/"), "/configuration")
		if err != nil || !ok || r.Method != http.MethodGet {
			http.Error(w, "not GetFunctionConfiguration: "+r.Method+" "+r.URL.Path, http.StatusNotFound)
			return
		}
		l.mu.Lock()
		l.calls = append(l.calls, awsCall{"lambda:GetFunctionConfiguration", "the ingest function"})
		vars, known := l.env[onfailure.FunctionName(name)]
		l.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if !known {
			w.Header().Set("X-Amzn-Errortype", "AccessDeniedException")
			w.WriteHeader(http.StatusForbidden)
			fmt.Fprintf(w, `{"Message":"User is not authorized to perform: lambda:GetFunctionConfiguration on resource: %s"}`, name)
			return
		}
		json.NewEncoder(w).Encode(map[string]any{"FunctionName": onfailure.FunctionName(name), "FunctionArn": name,
			"Runtime": "provided.al2023", "Environment": map[string]any{"Variables": vars}})
	}))
	t.Cleanup(srv.Close)
	l.URL = srv.URL
	return l
}

// set gives function the environment vars; nil forgets it.
func (l *fakeLambda) set(function string, vars map[string]string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if vars == nil {
		delete(l.env, function)
		return
	}
	l.env[function] = vars
}

// take returns the calls noted since the last take.
func (l *fakeLambda) take() []awsCall {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.calls
	l.calls = nil
	return out
}

// TestRedriveTenantStream: a batch given up on a tenant's own stream is
// redriven with the tenants of the ingest function that gave it up, read
// from Lambda, though the operator's environment holds none: the
// tenant's event is stored, the foreign one quarantined "tenant: ..." and
// never stored. Before, such a batch was stored as if from the shared
// stream, foreign event included, unless the operator had copied TENANTS
// and TENANT_STREAMS. A function that cannot be read, or that writes
// another table, leaves the object (exit 1) and says what to do;
// --tenants env takes them from the environment.
func TestRedriveTenantStream(t *testing.T) {
	ctx := context.Background()
	table, bucket := testddb.Table(t), tests3.Bucket(t)
	ddb := testddb.Client(t, testddb.Endpoint(t))
	const (
		stream   = "arn:aws:kinesis:us-east-1:000000000000:stream/tenant-team-a"
		function = "arn:aws:lambda:us-east-1:000000000000:function:Shardline-Ingest-T1"
		tenants  = `{"team-a": {"sources": ["team-a/"], "stream": true}, "team-b": {"sources": ["team-b/"]}}`
	)
	streams := `{"team-a": "` + stream + `"}`
	at := time.Now().UTC().Add(-time.Hour).Truncate(time.Second)
	var recs []events.KinesisEventRecord
	for i, src := range []string{"team-a/x", "team-b/y"} {
		data := fmt.Sprintf(`{"id":"e%d","source":%q,"type":"t","time":%q}`, i, src, at.Format(time.RFC3339))
		seq := fmt.Sprintf("4965650000000000000000000000000000000000%016d", i+1)
		recs = append(recs, events.KinesisEventRecord{EventSource: "aws:kinesis", EventSourceArn: stream,
			EventID: "shardId-000000000000:" + seq, Kinesis: events.KinesisRecord{Data: []byte(data), SequenceNumber: seq,
				PartitionKey: src, ApproximateArrivalTimestamp: events.SecondsEpochTime{Time: at}}})
	}
	rec, err := onfailure.NewKinesis(onfailure.GiveUp{StreamARN: stream, ShardID: "shardId-000000000000",
		Condition: onfailure.RetryAttemptsExhausted, Invocations: 11, FunctionError: true, FunctionARN: function, At: at}, recs)
	if err != nil {
		t.Fatal(err)
	}
	put := func() {
		t.Helper()
		body, _ := json.Marshal(rec)
		key := onfailure.Key("tenant-mapping", rec.Batch().ShardID, at)
		if _, err := tests3.Client(t).PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(body)}); err != nil {
			t.Fatal(err)
		}
	}
	put()

	lambdaAPI := newFakeLambda(t)
	for k, v := range map[string]string{
		"EVENTS_TABLE": table, "AWS_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": "local", "AWS_SECRET_ACCESS_KEY": "local",
		"AWS_ENDPOINT_URL_DYNAMODB": testddb.Endpoint(t), "AWS_ENDPOINT_URL_S3": tests3.Endpoint(t), "AWS_ENDPOINT_URL_LAMBDA": lambdaAPI.URL,
		"AWS_EC2_METADATA_DISABLED": "true", "AWS_CONFIG_FILE": os.DevNull, "AWS_SHARED_CREDENTIALS_FILE": os.DevNull,
		tenant.EnvTenants: "", tenant.EnvStreams: "", tenant.EnvRoles: "",
	} {
		t.Setenv(k, v)
	}
	redriveWith := func(extra ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := run(append([]string{"redrive", "--bucket", bucket, "--ingest-mapping", "tenant-mapping"}, extra...), &out, &errb)
		return code, out.String(), errb.String()
	}
	// quarantined is the reasons of the quarantined records.
	quarantined := func() []string {
		var reasons []string
		for _, it := range testddb.Scan(t, ddb, table) {
			if pk, _ := it[schema.PK].(*types.AttributeValueMemberS); pk != nil && strings.HasPrefix(pk.Value, "Q#") {
				r, _ := it[schema.Reason].(*types.AttributeValueMemberS)
				if r != nil {
					reasons = append(reasons, r.Value)
				}
			}
		}
		return reasons
	}
	stored := func() []string {
		var keys []string
		for k := range testddb.StoredIn(t, ddb, table).Events {
			keys = append(keys, k)
		}
		return keys
	}
	objects := func() int { return len(tests3.Keys(t, bucket)) }

	// The function cannot be read: the object stays, nothing is written,
	// in a dry run too, and the error says what to grant or give.
	for _, args := range [][]string{{"--dry-run"}, nil} {
		code, out, errs := redriveWith(args...)
		if code != 1 || !strings.Contains(out, "failed            1") || !strings.Contains(errs, "lambda:GetFunctionConfiguration") ||
			!strings.Contains(errs, "AccessDeniedException") || !strings.Contains(errs, "--tenants env") {
			t.Fatalf("redrive %v, function not readable: code %d, out %q, err %q", args, code, out, errs)
		}
		if calls := lambdaAPI.take(); len(calls) != 1 {
			t.Fatalf("redrive %v: %d Lambda requests, want 1", args, len(calls))
		}
		if s, q, n := stored(), quarantined(), objects(); len(s) != 0 || len(q) != 0 || n != 1 {
			t.Fatalf("redrive %v, function not readable: stored %v, quarantined %v, %d objects; want nothing written, the object left", args, s, q, n)
		}
	}

	// The function writes another table: the object stays.
	lambdaAPI.set("Shardline-Ingest-T1", map[string]string{"EVENTS_TABLE": "someone-elses", tenant.EnvTenants: tenants, tenant.EnvStreams: streams})
	if code, out, errs := redriveWith(); code != 1 || !strings.Contains(errs, "writes table someone-elses, and this run table "+table) || objects() != 1 || len(stored()) != 0 {
		t.Fatalf("redrive, another table: code %d, out %q, err %q, %d objects", code, out, errs, objects())
	}

	// The function read: its tenants check the batch.
	lambdaAPI.set("Shardline-Ingest-T1", map[string]string{"EVENTS_TABLE": table, tenant.EnvTenants: tenants, tenant.EnvStreams: streams})
	lambdaAPI.take()
	if code, out, errs := redriveWith(); code != 0 || !strings.Contains(out, "redriven          1 (2 records processed; objects deleted)") {
		t.Fatalf("redrive: code %d, out %q, err %q", code, out, errs)
	}
	checkTenantRedrive := func(how string) {
		t.Helper()
		s, q := stored(), quarantined()
		if len(s) != 1 || !strings.HasPrefix(s[0], "team-a/x e0 ") {
			t.Fatalf("%s: stored %v; want team-a/x's event only", how, s)
		}
		if len(q) != 1 || !strings.HasPrefix(q[0], "tenant: ") || !strings.Contains(q[0], "team-b/y") {
			t.Fatalf("%s: quarantined %q; want team-b/y's event, for its tenant", how, q)
		}
		if objects() != 0 {
			t.Fatalf("%s: %d objects left", how, objects())
		}
	}
	checkTenantRedrive("--tenants function")
	if calls := lambdaAPI.take(); len(calls) != 1 {
		t.Fatalf("one object: %d Lambda requests, want 1", len(calls))
	}

	// --tenants env: the environment's, and no request to Lambda. The
	// object put back (as if its delete was lost) changes nothing.
	t.Setenv(tenant.EnvTenants, tenants)
	t.Setenv(tenant.EnvStreams, streams)
	put()
	if code, out, errs := redriveWith("--tenants", "env"); code != 0 || !strings.Contains(out, "redriven          1") {
		t.Fatalf("redrive --tenants env: code %d, out %q, err %q", code, out, errs)
	}
	checkTenantRedrive("--tenants env")
	if calls := lambdaAPI.take(); len(calls) != 0 {
		t.Fatalf("--tenants env asked Lambda: %v", calls)
	}
	if code, _, errs := redriveWith("--tenants", "mine"); code == 0 || !strings.Contains(errs, `--tenants "mine": give "function"`) {
		t.Fatalf("--tenants mine: code %d, err %q", code, errs)
	}
}
