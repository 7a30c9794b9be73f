package redrive

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/shardline/shardline/internal/ingest"
	"github.com/shardline/shardline/local/kinesispoll"
	"github.com/shardline/shardline/ops/onfailure"
	"github.com/shardline/shardline/testkit/faultproxy"
	"github.com/shardline/shardline/testkit/testddb"
	"github.com/shardline/shardline/testkit/testkinesis"
	"github.com/shardline/shardline/testkit/tests3"
)

func TestMain(m *testing.M) { testddb.MainWith(m, testkinesis.Start, tests3.Start) }

// waitFor polls cond until it holds, for at most a minute.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// run starts f in the background and returns how to stop it.
func run(t *testing.T, f func(context.Context) error) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f(ctx) }()
	var once atomic.Bool
	stop = func() {
		if once.Swap(true) {
			return
		}
		cancel()
		if err := <-done; err != nil {
			t.Errorf("poller: %v", err)
		}
	}
	t.Cleanup(stop)
	return stop
}

// snapshot is every object of a bucket, to put back later as a redrive
// whose deletes were lost would leave them.
func snapshot(t *testing.T, bucket string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for _, k := range tests3.Keys(t, bucket) {
		out[k] = tests3.Get(t, bucket, k)
	}
	return out
}

func restore(t *testing.T, bucket string, objs map[string][]byte) {
	t.Helper()
	for k, b := range objs {
		if _, err := tests3.Client(t).PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(k), Body: bytes.NewReader(b)}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestRedriveIngest is the Kinesis path end to end: the local poller gives
// batches up while the table refuses one source's events and writes them,
// records included, to the local S3; a dry run reads them and changes
// nothing; a redrive while the fault lasts leaves every object; once it is
// fixed a redrive stores every event exactly once and deletes the objects;
// the same objects redriven again store nothing twice; an interrupted run
// leaves its object for the next.
func TestRedriveIngest(t *testing.T) {
	table, bucket := testddb.Table(t), tests3.Bucket(t)
	ddb := testddb.Client(t, testddb.Endpoint(t))
	kin := testkinesis.Client(t, testkinesis.Endpoint(t))
	arn := testkinesis.Stream(t, 1)
	proxy := faultproxy.For(t, testddb.Endpoint(t))
	h := ingest.New(ingest.DefaultConfig(table), testddb.Client(t, proxy.URL), ingest.Options{})
	records, want := testkinesis.Corpus(60, "doomed", "fine", "fine")
	testkinesis.Put(t, kin, arn, records)
	proxy.SetRule(func(req faultproxy.Request) (*faultproxy.Fault, faultproxy.Hold) {
		if req.Op == "BatchWriteItem" {
			return nil, faultproxy.PKHasPrefix("E#doomed")
		}
		return nil, nil
	})
	p := &kinesispoll.Poller{Client: kin, StreamARN: arn, Handler: h.Kinesis, BatchSize: 25, RetryAttempts: 1,
		Timeout: 300 * time.Millisecond, Idle: 20 * time.Millisecond, Bisect: true,
		OnFailure: onfailure.S3{Client: tests3.Client(t), Bucket: bucket, MappingUUID: "ingest-mapping"}.Put}
	stop := run(t, p.Run)
	waitFor(t, "every record processed", func() bool { return p.Processed() == int64(len(records)) })
	stop()
	objects := len(tests3.Keys(t, bucket))
	if objects == 0 || int64(objects) != p.Delivered() {
		t.Fatalf("%d batches given up on, %d objects", p.Delivered(), objects)
	}
	if n := len(testddb.StoredIn(t, ddb, table).Events); n >= len(want) {
		t.Fatalf("%d of %d events stored before the redrive: the fault did not bite", n, len(want))
	}
	saved := snapshot(t, bucket)
	r := &Redriver{S3: tests3.Client(t), Bucket: bucket, Ingest: h.Kinesis, Mappings: map[string]Consumer{"ingest-mapping": Ingest}}
	ctx := context.Background()

	var seen []Result
	writes := proxy.Count("BatchWriteItem")
	sum, err := r.Run(ctx, Options{DryRun: true, OnObject: func(res Result) { seen = append(seen, res) }})
	if err != nil || sum.WouldRedrive != objects || sum.NeedsAttention() || proxy.Count("BatchWriteItem") != writes || len(tests3.Keys(t, bucket)) != objects {
		t.Fatalf("dry run: %+v, %v", sum, err)
	}
	for _, res := range seen {
		if res.Consumer != Ingest || res.Records != res.Batch.BatchSize || res.Condition != onfailure.RetryAttemptsExhausted {
			t.Errorf("dry run: %+v", res)
		}
	}

	sum, err = r.Run(ctx, Options{Attempts: 2, InvokeTimeout: 300 * time.Millisecond, Max: 2})
	if err != nil || sum.Failed != 2 || sum.Redriven != 0 || !sum.NeedsAttention() || len(tests3.Keys(t, bucket)) != objects {
		t.Fatalf("redrive during the fault: %+v, %v", sum, err)
	}

	proxy.SetRule(nil)
	sum, err = r.Run(ctx, Options{})
	if err != nil || sum.Redriven != objects || sum.NeedsAttention() || sum.Done != sum.Records {
		t.Fatalf("redrive: %+v, %v", sum, err)
	}
	testkinesis.AssertStoredOnce(t, kin, arn, ddb, table, records, want)
	if keys := tests3.Keys(t, bucket); len(keys) != 0 {
		t.Fatalf("%d objects left", len(keys))
	}
	if sum, err = r.Run(ctx, Options{}); err != nil || sum.Objects != 0 {
		t.Fatalf("nothing left to redrive: %+v, %v", sum, err)
	}

	// The same objects again (a run whose deletes were lost): nothing twice.
	restore(t, bucket, saved)
	if sum, err = r.Run(ctx, Options{}); err != nil || sum.Redriven != objects {
		t.Fatalf("redrive again: %+v, %v", sum, err)
	}
	testkinesis.AssertStoredOnce(t, kin, arn, ddb, table, records, want)

	// Interrupted after an invocation: that object stays, the next run
	// finishes it.
	restore(t, bucket, saved)
	cctx, cancel := context.WithCancel(ctx)
	interrupted := &Redriver{S3: tests3.Client(t), Bucket: bucket, Mappings: r.Mappings,
		Ingest: func(ctx context.Context, ev events.KinesisEvent) (events.KinesisEventResponse, error) {
			defer cancel()
			return h.Kinesis(ctx, ev)
		}}
	if _, err := interrupted.Run(cctx, Options{}); !errors.Is(err, context.Canceled) || len(tests3.Keys(t, bucket)) != objects {
		t.Fatalf("interrupted run: %v, %d objects left of %d", err, len(tests3.Keys(t, bucket)), objects)
	}
	if sum, err = r.Run(ctx, Options{}); err != nil || sum.Redriven != objects {
		t.Fatalf("resumed run: %+v, %v", sum, err)
	}
	testkinesis.AssertStoredOnce(t, kin, arn, ddb, table, records, want)
}

// TestLeftInTheBucket: an object that is not an on-failure record, one
// without its records (an SQS destination's), one under a mapping the run
// was not given, one whose batch is not of the stream its mapping reads (a
// forged one), and one of a consumer the run has no code for are reported
// and left; Prefix and Max narrow a run.
func TestLeftInTheBucket(t *testing.T) {
	bucket := tests3.Bucket(t)
	put := func(key, body string) {
		if _, err := tests3.Client(t).PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key),
			Body: strings.NewReader(body)}); err != nil {
			t.Fatal(err)
		}
	}
	record := func(src onfailure.Source) string {
		g := onfailure.GiveUp{StreamARN: "arn:aws:dynamodb:us-east-1:000000000000:table/t/stream/x", ShardID: "shardId-1",
			Condition: onfailure.RetryAttemptsExhausted, Invocations: 2, FunctionARN: "arn:aws:lambda:us-east-1:000000000000:function:fn", At: time.Now()}
		var r onfailure.Record
		var err error
		if src == onfailure.Kinesis {
			r, err = onfailure.NewKinesis(g, []events.KinesisEventRecord{{Kinesis: events.KinesisRecord{SequenceNumber: "100", Data: []byte("{}")}}})
		} else {
			r, err = onfailure.NewDynamoDB(g, []events.DynamoDBEventRecord{{EventName: "INSERT", Change: events.DynamoDBStreamRecord{SequenceNumber: "100"}}})
		}
		if err != nil {
			t.Fatal(err)
		}
		body, _ := json.Marshal(r)
		return string(body)
	}
	put("aws/lambda/counter/s/1", `{"hello":"world"}`)
	put("aws/lambda/counter/s/2", `{"requestContext":{"condition":"RetryAttemptsExhausted"},"DDBStreamBatchInfo":{"shardId":"s","streamArn":"a","startSequenceNumber":"1","endSequenceNumber":"1","batchSize":1}}`)
	put("aws/lambda/counter/s/3", record(onfailure.Kinesis))
	put("aws/lambda/other/s/4", record(onfailure.DynamoDB))
	put("aws/lambda/counter/s/5", record(onfailure.DynamoDB))
	put("elsewhere/6", `{}`)
	r := &Redriver{S3: tests3.Client(t), Bucket: bucket, Mappings: map[string]Consumer{"counter": Counter}}
	var got []Result
	sum, err := r.Run(context.Background(), Options{OnObject: func(res Result) { got = append(got, res) }})
	if err != nil || sum.Objects != 5 || sum.Invalid != 2 || sum.Unknown != 2 || sum.Failed != 1 || !sum.NeedsAttention() {
		t.Fatalf("%+v, %v", sum, err)
	}
	for i, want := range []string{"neither KinesisBatchInfo nor DDBStreamBatchInfo", "no payload", "mapping counter is the counter's, but the object holds a kinesis stream batch",
		"counter: this run has no counter code", "event source mapping other (function fn) is not one this run was given"} {
		if got[i].Err == nil || !strings.Contains(got[i].Err.Error(), want) {
			t.Errorf("object %s: %v, want %q", got[i].Key, got[i].Err, want)
		}
	}
	sum, err = r.Run(context.Background(), Options{Prefix: "aws/lambda/other/"})
	if err != nil || sum.Objects != 1 || sum.Unknown != 1 {
		t.Fatalf("prefix: %+v, %v", sum, err)
	}
	sum, err = r.Run(context.Background(), Options{Max: 2})
	if err != nil || sum.Objects != 2 {
		t.Fatalf("max 2: %+v, %v", sum, err)
	}
	if n := len(tests3.Keys(t, bucket)); n != 6 {
		t.Fatalf("%d objects left, want 6", n)
	}
}
