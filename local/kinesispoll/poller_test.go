package kinesispoll

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"

	"github.com/shardline/shardline/internal/ingest"
	"github.com/shardline/shardline/local/kinesisread"
	"github.com/shardline/shardline/ops/onfailure"
	"github.com/shardline/shardline/testkit/faultproxy"
	"github.com/shardline/shardline/testkit/testddb"
	"github.com/shardline/shardline/testkit/testkinesis"
	"github.com/shardline/shardline/testkit/tests3"
)

func TestMain(m *testing.M) { testddb.MainWith(m, testkinesis.Start, tests3.Start) }

// rig is a stream in kinesalite, a table in DynamoDB Local behind a fault
// proxy, and the real ingest handler on it.
type rig struct {
	table string
	proxy *faultproxy.Proxy
	kin   *kinesis.Client
	arn   string
	h     *ingest.Handler
}

func newRig(t *testing.T, shards int) *rig {
	t.Helper()
	r := &rig{table: testddb.Table(t), kin: testkinesis.Client(t, testkinesis.Endpoint(t))}
	r.arn = testkinesis.Stream(t, shards)
	p := faultproxy.For(t, testddb.Endpoint(t))
	r.proxy = p
	r.h = ingest.New(ingest.DefaultConfig(r.table), testddb.Client(t, p.URL), ingest.Options{})
	return r
}

// start runs p until the test ends.
func (r *rig) start(t *testing.T, p *Poller) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("poller: %v", err)
		}
	})
}

// waitFor polls cond until it holds; a minute without it fails the test.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("gave up waiting for %s", what)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// TestEndToEnd: records put into kinesalite reach the real ingest handler
// through the poller and are stored in DynamoDB Local exactly once; an
// event without a time gets its record's arrival.
func TestEndToEnd(t *testing.T) {
	r := newRig(t, 2)
	records, want := testkinesis.Corpus(600, "svc-a", "svc-b", "auth #1 (eu/west)")
	testkinesis.Put(t, r.kin, r.arn, records)
	var invocations atomic.Int64
	var mu sync.Mutex
	var seen []events.KinesisEvent
	p := &Poller{Client: r.kin, StreamARN: r.arn, BatchSize: 100, RetryAttempts: 2, Bisect: true, Idle: 20 * time.Millisecond,
		Handler: func(ctx context.Context, ev events.KinesisEvent) (events.KinesisEventResponse, error) {
			invocations.Add(1)
			mu.Lock()
			seen = append(seen, ev)
			mu.Unlock()
			return r.h.Kinesis(ctx, ev)
		}}
	r.start(t, p)
	waitFor(t, "every record processed", func() bool { return p.Processed() == int64(len(records)) })
	testkinesis.AssertStoredOnce(t, r.kin, r.arn, testddb.Client(t, testddb.Endpoint(t)), r.table, records, want)
	if p.GivenUp() != 0 || invocations.Load() < int64(len(records)/100) {
		t.Errorf("%d records given up on, %d invocations", p.GivenUp(), invocations.Load())
	}
	// Each record is what Lambda sends: its shard and sequence number in the
	// event ID, the stream's ARN, ascending sequence numbers in a batch.
	mu.Lock()
	defer mu.Unlock()
	for _, ev := range seen {
		shard := ""
		for i, rec := range ev.Records {
			id, seq, _ := strings.Cut(rec.EventID, ":")
			if shard == "" {
				shard = id
			}
			if !strings.HasPrefix(id, "shardId-") || id != shard || seq != rec.Kinesis.SequenceNumber ||
				rec.EventSourceArn != r.arn || rec.EventSource != "aws:kinesis" || rec.EventName != "aws:kinesis:record" ||
				rec.AwsRegion != "us-east-1" || rec.Kinesis.ApproximateArrivalTimestamp.IsZero() || rec.Kinesis.PartitionKey == "" {
				t.Fatalf("record %+v", rec)
			}
			if i > 0 && onfailure.CompareSequence(ev.Records[i-1].Kinesis.SequenceNumber, seq) >= 0 {
				t.Fatalf("sequence numbers out of order in a batch")
			}
		}
	}
	raw, _ := json.Marshal(seen[0].Records[0])
	for _, key := range []string{`"eventSourceARN":"arn:aws:kinesis:us-east-1:000000000000:stream/`, `"eventID":"shardId-`,
		`"approximateArrivalTimestamp":1`, `"kinesisSchemaVersion":"1.0"`, `"eventVersion":"1.0"`} {
		if !strings.Contains(string(raw), key) {
			t.Errorf("record JSON %s lacks %s", raw, key)
		}
	}
}

// TestTransientFaultsAreRetried: while DynamoDB throttles some writes and
// leaves one source's items unprocessed past the invocation's deadline, the
// handler reports those records and the poller sends them again from the
// lowest; once the fault clears everything is stored exactly once.
func TestTransientFaultsAreRetried(t *testing.T) {
	r := newRig(t, 1)
	records, want := testkinesis.Corpus(300, "svc-a", "flaky")
	testkinesis.Put(t, r.kin, r.arn, records)
	var holding atomic.Bool
	holding.Store(true)
	r.proxy.SetRule(func(req faultproxy.Request) (*faultproxy.Fault, faultproxy.Hold) {
		if req.Op != "BatchWriteItem" {
			return nil, nil
		}
		if req.N%4 == 0 {
			return faultproxy.Throttled, nil
		}
		if holding.Load() {
			return nil, faultproxy.PKHasPrefix("E#flaky")
		}
		return nil, nil
	})
	var reported atomic.Int64
	p := &Poller{Client: r.kin, StreamARN: r.arn, BatchSize: 100, RetryAttempts: -1, Timeout: 700 * time.Millisecond, Idle: 20 * time.Millisecond,
		Handler: func(ctx context.Context, ev events.KinesisEvent) (events.KinesisEventResponse, error) {
			resp, err := r.h.Kinesis(ctx, ev)
			if len(resp.BatchItemFailures) > 0 && reported.Add(1) >= 3 {
				holding.Store(false) // the table recovers after three reports
			}
			return resp, err
		}}
	r.start(t, p)
	waitFor(t, "every record processed", func() bool { return p.Processed() == int64(len(records)) })
	r.proxy.SetRule(nil)
	if reported.Load() < 3 || r.proxy.Held.Load() == 0 || r.proxy.Faults.Load() == 0 {
		t.Fatalf("the faults did not bite: %d reports, %d held, %d faults", reported.Load(), r.proxy.Held.Load(), r.proxy.Faults.Load())
	}
	if p.GivenUp() != 0 {
		t.Fatalf("%d records given up on", p.GivenUp())
	}
	testkinesis.AssertStoredOnce(t, r.kin, r.arn, testddb.Client(t, testddb.Endpoint(t)), r.table, records, want)
}

// TestGiveUpSendsOnFailureRecord: a fault that outlasts RetryAttempts gets
// the batch given up on, and the local S3 bucket receives the object
// Lambda's S3 on-failure destination would: under Lambda's key layout, why
// and where, and the records themselves. The poller then goes on with the
// next batch.
func TestGiveUpSendsOnFailureRecord(t *testing.T) {
	r := newRig(t, 1)
	records, _ := testkinesis.Corpus(40, "doomed", "fine")
	testkinesis.Put(t, r.kin, r.arn, records[:20])
	r.proxy.SetRule(func(req faultproxy.Request) (*faultproxy.Fault, faultproxy.Hold) {
		if req.Op == "BatchWriteItem" {
			return nil, faultproxy.PKHasPrefix("E#doomed")
		}
		return nil, nil
	})
	bucket := tests3.Bucket(t)
	p := &Poller{Client: r.kin, StreamARN: r.arn, BatchSize: 100, RetryAttempts: 2, Timeout: 500 * time.Millisecond, Idle: 20 * time.Millisecond,
		Handler: r.h.Kinesis, OnFailure: onfailure.S3{Client: tests3.Client(t), Bucket: bucket, MappingUUID: "mapping-1"}.Put}
	r.start(t, p)
	waitFor(t, "the first batch given up on", func() bool { return p.Delivered() == 1 })
	testkinesis.Put(t, r.kin, r.arn, records[20:])
	waitFor(t, "the rest processed", func() bool { return p.Processed() == int64(len(records)) })

	keys := tests3.Keys(t, bucket)
	if len(keys) != 2 || int64(len(keys)) != p.Delivered() {
		t.Fatalf("%d on-failure objects, %d delivered, want one a batch", len(keys), p.Delivered())
	}
	stream, _ := kinesisread.ParseARN(r.arn)
	for _, k := range keys {
		if !strings.HasPrefix(k, "aws/lambda/mapping-1/shardId-000000000000/") {
			t.Errorf("key %s", k)
		}
		body := tests3.Get(t, bucket, k)
		rec, err := onfailure.Parse(body)
		if err != nil {
			t.Fatal(err)
		}
		b := rec.KinesisBatchInfo
		if rec.Version != "1.0" || rec.RequestContext.Condition != onfailure.RetryAttemptsExhausted || rec.RequestContext.ApproximateInvokeCount != 3 ||
			rec.ResponseContext.StatusCode != 200 || rec.ResponseContext.FunctionError != nil || b.StreamARN != r.arn ||
			!strings.HasPrefix(rec.RequestContext.FunctionARN, "arn:aws:lambda:us-east-1:000000000000:function:") {
			t.Errorf("record %s", body)
		}
		got, err := rec.Kinesis()
		if err != nil {
			t.Fatal(err)
		}
		// The batch runs from the first record that held a doomed event to
		// the end of what was read with it; its records are the stream's.
		inStream, err := kinesisread.Range(context.Background(), r.kin, stream, b.ShardID, b.StartSequenceNumber, b.EndSequenceNumber)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != b.BatchSize || len(inStream) != len(got) || !strings.Contains(string(got[0].Kinesis.Data), `"source":"doomed"`) ||
			onfailure.ArrivalTime(got[0].Kinesis.ApproximateArrivalTimestamp.Time) != b.ApproximateArrivalOfFirstRecord ||
			onfailure.ArrivalTime(got[len(got)-1].Kinesis.ApproximateArrivalTimestamp.Time) != b.ApproximateArrivalOfLastRecord {
			t.Errorf("batch info %+v does not match its %d records (%d in its range of the stream)", b, len(got), len(inStream))
		}
		for i := range got {
			if string(got[i].Kinesis.Data) != string(inStream[i].Kinesis.Data) || got[i].Kinesis.SequenceNumber != inStream[i].Kinesis.SequenceNumber {
				t.Errorf("record %d differs from the stream's", i)
			}
		}
	}
}
