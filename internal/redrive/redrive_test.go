package redrive

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/shardline/shardline/internal/faultproxy"
	"github.com/shardline/shardline/internal/ingest"
	"github.com/shardline/shardline/internal/kinesispoll"
	"github.com/shardline/shardline/internal/onfailure"
	"github.com/shardline/shardline/internal/testdb"
	"github.com/shardline/shardline/internal/testkinesis"
	"github.com/shardline/shardline/internal/testsqs"
)

func TestMain(m *testing.M) { testdb.MainWith(m, testkinesis.Start, testsqs.Start) }

// rig is a stream, a queue, and a table behind a fault proxy with the real
// ingest handler on it.
type rig struct {
	table string
	ddb   *dynamodb.Client
	proxy *faultproxy.Proxy
	kin   *kinesis.Client
	arn   string
	sqs   *sqs.Client
	queue string
	h     *ingest.Handler
}

func newRig(t *testing.T) *rig {
	t.Helper()
	r := &rig{table: testdb.Table(t), ddb: testdb.Client(t, testdb.Endpoint(t)), kin: testkinesis.Client(t, testkinesis.Endpoint(t)),
		sqs: testsqs.Client(t), queue: testsqs.Queue(t)}
	r.arn = testkinesis.Stream(t, 1)
	p := faultproxy.For(t, testdb.Endpoint(t))
	r.proxy = p
	r.h = ingest.New(ingest.DefaultConfig(r.table), testdb.Client(t, p.URL), ingest.Options{})
	return r
}

func (r *rig) redriver() *Redriver {
	return &Redriver{SQS: r.sqs, QueueURL: r.queue, Kinesis: r.kin, Ingest: r.h.Kinesis}
}

// failing holds the writes of one source's events, as a table that refuses
// them would.
func failing(source string) faultproxy.Rule {
	return func(req faultproxy.Request) (*faultproxy.Fault, faultproxy.Hold) {
		if req.Op == "BatchWriteItem" {
			return nil, faultproxy.PKHasPrefix("E#" + source)
		}
		return nil, nil
	}
}

// giveUp runs the poller over records until it has processed them all,
// with a fault on the source "doomed" that outlasts its retries, and
// returns how many batches it gave up on.
func (r *rig) giveUp(t *testing.T, records [][]byte) int64 {
	t.Helper()
	testkinesis.Put(t, r.kin, r.arn, records)
	r.proxy.SetRule(failing("doomed"))
	p := &kinesispoll.Poller{Client: r.kin, StreamARN: r.arn, Handler: r.h.Kinesis, BatchSize: 25, RetryAttempts: 1,
		Timeout: 300 * time.Millisecond, Idle: 20 * time.Millisecond, Bisect: true,
		OnFailure: onfailure.SQS{Client: r.sqs, QueueURL: r.queue}.Send}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}()
	deadline, stop := context.WithTimeout(context.Background(), time.Minute)
	defer stop()
	for p.Processed() < int64(len(records)) {
		select {
		case <-deadline.Done():
			t.Fatalf("the poller processed %d of %d records", p.Processed(), len(records))
		case <-time.After(20 * time.Millisecond):
		}
	}
	if p.Delivered() == 0 || p.Delivered() != int64(len(r.messages(t))) {
		t.Fatalf("%d batches given up on, %d messages on the queue", p.Delivered(), len(r.messages(t)))
	}
	return p.Delivered()
}

// messages peeks at the queue: it receives every message and makes each
// visible again.
func (r *rig) messages(t *testing.T) []types.Message {
	t.Helper()
	ctx := context.Background()
	var all []types.Message
	seen := map[string]bool{}
	for {
		out, err := r.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(r.queue), MaxNumberOfMessages: 10, VisibilityTimeout: 30})
		if err != nil {
			t.Fatal(err)
		}
		fresh := 0
		for _, m := range out.Messages {
			if !seen[*m.MessageId] {
				seen[*m.MessageId], fresh = true, fresh+1
				all = append(all, m)
			}
		}
		if fresh == 0 {
			break
		}
	}
	for _, m := range all {
		if _, err := r.sqs.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(r.queue), ReceiptHandle: m.ReceiptHandle}); err != nil {
			t.Fatal(err)
		}
	}
	return all
}

// TestRedriveAfterGiveUp is the whole path: the poller gives up on batches
// while the table refuses one source; a dry run reads them back and
// changes nothing; a redrive while the fault lasts leaves them; once the
// fault is fixed a redrive stores every event exactly once and deletes the
// messages; a second redrive does nothing.
func TestRedriveAfterGiveUp(t *testing.T) {
	r := newRig(t)
	records, want := testkinesis.Corpus(150, "doomed", "fine", "fine")
	batches := r.giveUp(t, records)
	ctx := context.Background()
	before := testdb.StoredIn(t, r.ddb, r.table)
	if len(before.Events) >= len(want) {
		t.Fatalf("%d of %d events stored before the redrive: the fault did not bite", len(before.Events), len(want))
	}

	// A dry run reads every batch back and writes nothing.
	var lines []Result
	writes := r.proxy.Count("BatchWriteItem")
	sum, err := r.redriver().Run(ctx, Options{DryRun: true, Wait: time.Second, OnMessage: func(res Result) { lines = append(lines, res) }})
	if err != nil || sum.WouldRedrive != int(batches) || sum.Messages != int(batches) || sum.Stored != 0 || sum.NeedsAttention() {
		t.Fatalf("dry run: %+v, %v", sum, err)
	}
	for _, l := range lines {
		if l.Outcome != WouldRedrive || l.Records < l.Batch.BatchSize || l.Condition != onfailure.RetryAttemptsExhausted {
			t.Errorf("dry run: %+v", l)
		}
	}
	if r.proxy.Count("BatchWriteItem") != writes || len(r.messages(t)) != int(batches) {
		t.Fatal("the dry run wrote or deleted something")
	}

	// While the fault lasts, the messages stay.
	sum, err = r.redriver().Run(ctx, Options{Wait: time.Second, Attempts: 2, InvokeTimeout: 200 * time.Millisecond})
	if err != nil || sum.Failed != int(batches) || sum.Redriven != 0 || !sum.NeedsAttention() {
		t.Fatalf("redrive during the fault: %+v, %v", sum, err)
	}
	if len(r.messages(t)) != int(batches) {
		t.Fatal("a message was deleted though its records were not stored")
	}

	// Fixed: every event stored once, every message gone.
	r.proxy.SetRule(nil)
	sum, err = r.redriver().Run(ctx, Options{Wait: time.Second})
	if err != nil || sum.Redriven != int(batches) || sum.NeedsAttention() || sum.Stored != sum.Records {
		t.Fatalf("redrive: %+v, %v", sum, err)
	}
	testkinesis.AssertStoredOnce(t, r.kin, r.arn, r.ddb, r.table, records, want)
	if n := len(r.messages(t)); n != 0 {
		t.Fatalf("%d messages left", n)
	}

	// Again: nothing to do.
	writes = r.proxy.Count("BatchWriteItem")
	sum, err = r.redriver().Run(ctx, Options{Wait: time.Second})
	if err != nil || sum.Messages != 0 || r.proxy.Count("BatchWriteItem") != writes {
		t.Fatalf("second redrive: %+v, %v, %d writes", sum, err, r.proxy.Count("BatchWriteItem")-writes)
	}
}

// TestInterruptedRedriveResumes: a run stopped halfway leaves its message
// on the queue, visible at once, and the next run finishes it without a
// duplicate.
func TestInterruptedRedriveResumes(t *testing.T) {
	r := newRig(t)
	records, want := testkinesis.Corpus(60, "doomed")
	batches := r.giveUp(t, records)
	r.proxy.SetRule(nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var calls atomic.Int64
	rd := r.redriver()
	rd.Ingest = func(ctx context.Context, ev events.KinesisEvent) (events.KinesisEventResponse, error) {
		resp, err := r.h.Kinesis(ctx, ev)
		if calls.Add(1) == 2 {
			cancel() // Ctrl-C after the second invocation
		}
		return resp, err
	}
	if _, err := rd.Run(ctx, Options{Wait: time.Second, BatchSize: 5}); !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted run: %v", err)
	}
	if n := len(r.messages(t)); n != int(batches) {
		t.Fatalf("%d messages on the queue after the interruption, want %d", n, batches)
	}
	sum, err := r.redriver().Run(context.Background(), Options{Wait: time.Second})
	if err != nil || sum.Redriven != int(batches) {
		t.Fatalf("resumed run: %+v, %v", sum, err)
	}
	testkinesis.AssertStoredOnce(t, r.kin, r.arn, r.ddb, r.table, records, want)
}

// TestLeftOnTheQueue: messages whose records the stream no longer keeps,
// of a stream that is gone, of another stream than asked for, or that are
// not on-failure records are reported and left; --max stops early.
func TestLeftOnTheQueue(t *testing.T) {
	r := newRig(t)
	testkinesis.Put(t, r.kin, r.arn, [][]byte{[]byte(`{"specversion":"1.0","id":"1","source":"s","type":"t"}`)})
	shard, seq, arrived := firstRecord(t, r)
	send := func(b onfailure.Batch) {
		body, _ := json.Marshal(onfailure.New(b))
		if _, err := r.sqs.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(r.queue), MessageBody: aws.String(string(body))}); err != nil {
			t.Fatal(err)
		}
	}
	batch := onfailure.Batch{StreamARN: r.arn, ShardID: shard, FirstSequence: seq, LastSequence: seq, Size: 1,
		Condition: onfailure.RetryAttemptsExhausted, At: time.Now()}
	old := batch
	old.FirstArrival = arrived.Add(-25 * time.Hour) // kinesalite keeps records 24 hours
	send(old)
	gone := batch
	gone.StreamARN = "arn:aws:kinesis:us-east-1:000000000000:stream/deleted-long-ago"
	gone.FirstArrival = arrived
	send(gone)
	if _, err := r.sqs.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(r.queue), MessageBody: aws.String(`{"hello":"world"}`)}); err != nil {
		t.Fatal(err)
	}
	var got []Result
	sum, err := r.redriver().Run(context.Background(), Options{Wait: time.Second, OnMessage: func(res Result) { got = append(got, res) }})
	if err != nil || sum.Messages != 3 || sum.Gone != 2 || sum.Invalid != 1 || !sum.NeedsAttention() {
		t.Fatalf("%+v, %v", sum, err)
	}
	for _, res := range got {
		switch {
		case res.Outcome == Invalid && strings.Contains(res.Err.Error(), "no KinesisBatchInfo"):
		case res.Outcome == Gone && res.Batch.StreamARN == r.arn && strings.Contains(res.Err.Error(), "have left the stream: the first arrived") &&
			strings.Contains(res.Err.Error(), "the stream keeps records 24h0m0s"):
		case res.Outcome == Gone && res.Batch.StreamARN != r.arn && strings.Contains(res.Err.Error(), "is gone"):
		default:
			t.Errorf("%+v", res)
		}
	}
	if n := len(r.messages(t)); n != 3 {
		t.Fatalf("%d messages left, want 3", n)
	}

	// Another stream's messages are not touched when a stream is named;
	// --max 1 handles one message.
	fresh := batch
	fresh.FirstArrival = arrived
	send(fresh)
	sum, err = r.redriver().Run(context.Background(), Options{Wait: time.Second, StreamARN: gone.StreamARN, Max: 10})
	if err != nil || sum.Other != 2 || sum.Gone != 1 || sum.Invalid != 1 || sum.Redriven != 0 {
		t.Fatalf("only the gone stream: %+v, %v", sum, err)
	}
	sum, err = r.redriver().Run(context.Background(), Options{Wait: time.Second, Max: 1})
	if err != nil || sum.Messages != 1 {
		t.Fatalf("max 1: %+v, %v", sum, err)
	}
}

// firstRecord is the shard, sequence number and arrival of the stream's
// first record.
func firstRecord(t *testing.T, r *rig) (string, string, time.Time) {
	t.Helper()
	out, err := r.kin.ListShards(context.Background(), &kinesis.ListShardsInput{StreamName: aws.String(r.arn[strings.LastIndexByte(r.arn, '/')+1:])})
	if err != nil {
		t.Fatal(err)
	}
	shard := *out.Shards[0].ShardId
	it, err := r.kin.GetShardIterator(context.Background(), &kinesis.GetShardIteratorInput{StreamName: aws.String(r.arn[strings.LastIndexByte(r.arn, '/')+1:]),
		ShardId: aws.String(shard), ShardIteratorType: "TRIM_HORIZON"})
	if err != nil {
		t.Fatal(err)
	}
	recs, err := r.kin.GetRecords(context.Background(), &kinesis.GetRecordsInput{ShardIterator: it.ShardIterator})
	if err != nil || len(recs.Records) == 0 {
		t.Fatalf("%v, %d records", err, len(recs.Records))
	}
	return shard, *recs.Records[0].SequenceNumber, *recs.Records[0].ApproximateArrivalTimestamp
}
