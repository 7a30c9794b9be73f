package redrive

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/shardline/shardline/internal/ingest"
	"github.com/shardline/shardline/internal/item"
	"github.com/shardline/shardline/internal/schema"
	"github.com/shardline/shardline/ops/onfailure"
	"github.com/shardline/shardline/testkit/testddb"
	"github.com/shardline/shardline/testkit/tests3"
)

// TestRedriveQuarantinesAWideTime: issue 28's item 3 through redrive. A
// batch given up on holds an event that MAX_EVENT_BYTES 200,000 lets in
// and whose time, 95,000 characters U+0080, is refused with a reason three
// times its size. Its quarantine item was refused by DynamoDB, so every
// redrive failed it again ("not stored for now"); now the item fits, the
// record is quarantined and the object redriven and deleted.
func TestRedriveQuarantinesAWideTime(t *testing.T) {
	table, bucket := testddb.Table(t), tests3.Bucket(t)
	ddb := testddb.Client(t, testddb.Endpoint(t))
	cfg := ingest.DefaultConfig(table)
	cfg.MaxEventBytes = 200_000
	h := ingest.New(cfg, ddb, ingest.Options{})
	const arn = "arn:aws:kinesis:us-east-1:000000000000:stream/wide"
	now := time.Now().UTC()
	wide := `{"specversion":"1.0","id":"wide","source":"s","type":"t","time":"` + strings.Repeat("\u0080", 95_000) + `"}`
	fine := `{"specversion":"1.0","id":"fine","source":"s","type":"t","time":"` + now.Format(time.RFC3339) + `"}`
	var recs []events.KinesisEventRecord
	for i, data := range []string{wide, fine} {
		seq := "4965650000000000000000000000000000000000000000000000000" + string(rune('1'+i))
		recs = append(recs, events.KinesisEventRecord{EventSource: "aws:kinesis", EventSourceArn: arn, EventID: "shardId-000000000000:" + seq,
			Kinesis: events.KinesisRecord{Data: []byte(data), SequenceNumber: seq, ApproximateArrivalTimestamp: events.SecondsEpochTime{Time: now}}})
	}
	rec, err := onfailure.NewKinesis(onfailure.GiveUp{StreamARN: arn, ShardID: "shardId-000000000000", Condition: onfailure.RetryAttemptsExhausted,
		Invocations: 3, FunctionARN: "arn:aws:lambda:us-east-1:000000000000:function:ingest", At: now}, recs)
	if err != nil {
		t.Fatal(err)
	}
	if err := (onfailure.S3{Client: tests3.Client(t), Bucket: bucket, MappingUUID: "ingest-mapping"}).Put(context.Background(), rec); err != nil {
		t.Fatal(err)
	}
	r := &Redriver{S3: tests3.Client(t), Bucket: bucket, Ingest: h.Kinesis, Mappings: map[string]Consumer{"ingest-mapping": Ingest}}
	var res []Result
	sum, err := r.Run(context.Background(), Options{Attempts: 2, OnObject: func(x Result) { res = append(res, x) }})
	if err != nil || sum.Redriven != 1 || sum.NeedsAttention() || sum.Done != 2 {
		for _, x := range res {
			t.Logf("%s: %v", x.Key, x.Err)
		}
		t.Fatalf("redrive: %+v, %v", sum, err)
	}
	if n := len(tests3.Keys(t, bucket)); n != 0 {
		t.Fatalf("%d objects left, want none", n)
	}
	if stored := testddb.StoredIn(t, ddb, table); len(stored.Events) != 1 || stored.Quarantined != 1 {
		t.Fatalf("%d events and %d quarantined records stored, want 1 and 1", len(stored.Events), stored.Quarantined)
	}
	for _, q := range testddb.Scan(t, ddb, table) {
		if pk, ok := q[schema.PK].(*types.AttributeValueMemberS); !ok || !strings.HasPrefix(pk.Value, "Q#") {
			continue
		}
		if n := item.Bytes(q); n > item.MaxItemBytes {
			t.Fatalf("quarantine item of %d bytes", n)
		}
		if raw, whole, err := item.RawOf(q); err != nil || !whole || string(raw) != wide {
			t.Fatalf("raw of %d bytes, whole %v, %v; want the %d bytes sent", len(raw), whole, err, len(wide))
		}
	}
}
