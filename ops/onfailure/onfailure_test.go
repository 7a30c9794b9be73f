package onfailure

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

func fixture(t *testing.T, name string) []byte {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// TestRoundTrip: records as Lambda writes them to an S3 destination (a
// Kinesis batch after a function error, one that aged out before any
// invocation, a DynamoDB stream batch) parse and write back to the same
// JSON.
func TestRoundTrip(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.json")
	if len(files) < 3 {
		t.Fatalf("%d fixtures", len(files))
	}
	for _, f := range files {
		raw := fixture(t, filepath.Base(f))
		r, err := Parse(raw)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		var want bytes.Buffer
		if err := json.Compact(&want, raw); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(out, want.Bytes()) {
			t.Errorf("%s:\n got %s\nwant %s", f, out, want.Bytes())
		}
	}
}

// TestKinesisPayload: the payload holds the batch's records as the function
// got them, and the batch info describes exactly those.
func TestKinesisPayload(t *testing.T) {
	r, err := Parse(fixture(t, "kinesis-s3-retry-exhausted.json"))
	if err != nil {
		t.Fatal(err)
	}
	recs, err := r.Kinesis()
	if err != nil {
		t.Fatal(err)
	}
	b := r.Batch()
	if r.Source() != Kinesis || len(recs) != b.BatchSize || recs[0].Kinesis.SequenceNumber != b.StartSequenceNumber ||
		recs[len(recs)-1].Kinesis.SequenceNumber != b.EndSequenceNumber ||
		ArrivalTime(recs[0].Kinesis.ApproximateArrivalTimestamp.Time) != b.ApproximateArrivalOfFirstRecord ||
		ArrivalTime(recs[len(recs)-1].Kinesis.ApproximateArrivalTimestamp.Time) != b.ApproximateArrivalOfLastRecord {
		t.Fatalf("batch info %+v does not describe its %d records", b, len(recs))
	}
	if !strings.Contains(string(recs[0].Kinesis.Data), `"id":"ord-7f3ab1"`) || recs[0].EventSourceArn != b.StreamARN {
		t.Fatalf("record 0: %+v", recs[0])
	}
	if _, err := r.DynamoDB(); err == nil {
		t.Fatal("a Kinesis record decoded as a DynamoDB stream one")
	}
	if r.FunctionName() != "Shardline-PipelineIngest9B2C3D4E-Ab12Cd34Ef56" || *r.ResponseContext.FunctionError != Unhandled {
		t.Fatalf("%+v", r.RequestContext)
	}
	aged, err := Parse(fixture(t, "kinesis-s3-record-age.json"))
	if err != nil || aged.ResponseContext != nil || aged.RequestContext.Condition != RecordAgeExceeded {
		t.Fatalf("aged out before any invocation: %+v, %v", aged, err)
	}
}

// TestDynamoDBPayload: a table stream batch's records decode to the stream
// records the counter and the archive read.
func TestDynamoDBPayload(t *testing.T) {
	r, err := Parse(fixture(t, "dynamodb-s3-retry-exhausted.json"))
	if err != nil {
		t.Fatal(err)
	}
	recs, err := r.DynamoDB()
	if err != nil {
		t.Fatal(err)
	}
	b := r.Batch()
	if r.Source() != DynamoDB || len(recs) != b.BatchSize || recs[0].Change.SequenceNumber != b.StartSequenceNumber ||
		recs[1].Change.SequenceNumber != b.EndSequenceNumber ||
		recs[0].Change.ApproximateCreationDateTime.UTC().Format(StreamTimeLayout) != b.ApproximateArrivalOfFirstRecord {
		t.Fatalf("batch info %+v does not describe its %d records", b, len(recs))
	}
	if recs[0].EventName != "INSERT" || recs[0].Change.NewImage["pk"].String() != "E#shop/orders#2026-11-22#2" ||
		recs[1].Change.NewImage["type"].String() != "com.example.order.paid" {
		t.Fatalf("%+v", recs[0])
	}
	if _, err := r.Kinesis(); err == nil {
		t.Fatal("a DynamoDB stream record decoded as a Kinesis one")
	}
}

// TestNew: what the local pollers write reads back as Lambda's records do,
// with the batch info taken from the records.
func TestNew(t *testing.T) {
	lambda, _ := Parse(fixture(t, "kinesis-s3-retry-exhausted.json"))
	krecs, _ := lambda.Kinesis()
	at := time.Date(2026, 11, 22, 11, 38, 6, 21e6, time.FixedZone("CET", 3600))
	g := GiveUp{StreamARN: lambda.Batch().StreamARN, ShardID: "shardId-000000000001", Condition: RetryAttemptsExhausted,
		Invocations: 11, FunctionError: true, FunctionARN: lambda.RequestContext.FunctionARN, RequestID: lambda.RequestContext.RequestID, At: at}
	r, err := NewKinesis(g, krecs)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(r)
	got, err := Parse(body)
	if err != nil {
		t.Fatal(err)
	}
	if *got.Batch() != *lambda.Batch() || got.RequestContext != lambda.RequestContext || *got.ResponseContext.FunctionError != Unhandled ||
		got.Timestamp != "2026-11-22T10:38:06.021Z" {
		t.Fatalf("\n got %+v %+v\nwant %+v %+v", got.RequestContext, got.Batch(), lambda.RequestContext, lambda.Batch())
	}
	back, err := got.Kinesis()
	if err != nil || len(back) != len(krecs) || string(back[1].Kinesis.Data) != string(krecs[1].Kinesis.Data) {
		t.Fatalf("payload: %v", err)
	}

	ddb, _ := Parse(fixture(t, "dynamodb-s3-retry-exhausted.json"))
	drecs, _ := ddb.DynamoDB()
	g.StreamARN, g.ShardID, g.Invocations, g.FunctionError = ddb.Batch().StreamARN, ddb.Batch().ShardID, 0, false
	g.Condition = RecordAgeExceeded
	r, err = NewDynamoDB(g, drecs)
	if err != nil {
		t.Fatal(err)
	}
	body, _ = json.Marshal(r)
	got, err = Parse(body)
	if err != nil || *got.Batch() != *ddb.Batch() || got.ResponseContext != nil || got.Source() != DynamoDB {
		t.Fatalf("%+v, %v", got, err)
	}
	if _, err := NewKinesis(g, nil); err == nil {
		t.Fatal("a record of no records")
	}
}

// TestKey is Lambda's object key layout.
func TestKey(t *testing.T) {
	k := Key("a1b2c3d4-5678-90ab-cdef-000000000001", "shardId-000000000003", time.Date(2026, 11, 22, 10, 38, 6, 0, time.FixedZone("", -3600)))
	re := regexp.MustCompile(`^aws/lambda/a1b2c3d4-5678-90ab-cdef-000000000001/shardId-000000000003/2026/11/22/2026-11-22T11\.38\.06-[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	if !re.MatchString(k) {
		t.Fatal(k)
	}
}

// TestParseRefuses what does not locate and hold one stream batch.
func TestParseRefuses(t *testing.T) {
	ok := `"shardId":"s","streamArn":"a","startSequenceNumber":"1","endSequenceNumber":"2"`
	for _, body := range []string{
		`not json`,
		`{"requestContext":{"condition":"RetryAttemptsExhausted"}}`,
		`{"requestContext":{"condition":"RetryAttemptsExhausted"},"KinesisBatchInfo":{` + ok + `},"DDBStreamBatchInfo":{` + ok + `}}`,
		`{"requestContext":{},"KinesisBatchInfo":{` + ok + `}}`,
		`{"requestContext":{"condition":"x"},"KinesisBatchInfo":{"shardId":"s","startSequenceNumber":"1","endSequenceNumber":"2"}}`,
		`{"requestContext":{"condition":"x"},"DDBStreamBatchInfo":{"streamArn":"a","startSequenceNumber":"1","endSequenceNumber":"2"}}`,
		`{"requestContext":{"condition":"x"},"KinesisBatchInfo":{"streamArn":"a","shardId":"s","startSequenceNumber":"x1","endSequenceNumber":"2"}}`,
		`{"requestContext":{"condition":"x"},"KinesisBatchInfo":{"streamArn":"a","shardId":"s","startSequenceNumber":"1","endSequenceNumber":"02"}}`,
		`{"requestContext":{"condition":"x"},"KinesisBatchInfo":{"streamArn":"a","shardId":"s","startSequenceNumber":"10","endSequenceNumber":"9"}}`,
	} {
		if _, err := Parse([]byte(body)); err == nil {
			t.Errorf("%s: parsed", body)
		}
	}
	// An SQS destination's record locates its batch but holds no records.
	r, err := Parse([]byte(`{"requestContext":{"condition":"RetryAttemptsExhausted"},"KinesisBatchInfo":{` + ok + `}}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Kinesis(); err == nil || !strings.Contains(err.Error(), "no payload") {
		t.Fatalf("records of a record without payload: %v", err)
	}
}

func TestFunctionName(t *testing.T) {
	for in, want := range map[string]string{
		"arn:aws:lambda:us-east-1:123456789012:function:shardline-ingest":         "shardline-ingest",
		"arn:aws:lambda:us-east-1:123456789012:function:shardline-ingest:live":    "shardline-ingest",
		"arn:aws:lambda:us-east-1:123456789012:function:shardline-ingest:$LATEST": "shardline-ingest",
		"shardline-counter": "shardline-counter",
	} {
		if got := FunctionName(in); got != want {
			t.Errorf("FunctionName(%s) = %s", in, got)
		}
	}
}

func TestCompareSequence(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want int
	}{{"9", "10", -1}, {"10", "9", 1}, {"0009", "10", -1}, {"000", "0", 0}, {"123", "123", 0}, {"124", "123", 1}, {"49601189658422359378836298521827638475320189012309704722", "49601189658422359378836298522902373528957594348623495186", -1}} {
		if got := CompareSequence(c.a, c.b); got != c.want {
			t.Errorf("CompareSequence(%s, %s) = %d", c.a, c.b, got)
		}
	}
}
