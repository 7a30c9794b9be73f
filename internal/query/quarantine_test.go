package query

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/shardline/shardline/internal/ingest"
	"github.com/shardline/shardline/internal/item"
	"github.com/shardline/shardline/internal/schema"
	"github.com/shardline/shardline/internal/testdb"
)

// TestQuarantineListing: quarantined records come back, newest first, with
// raw bytes, reason and origin, each once across pages.
func TestQuarantineListing(t *testing.T) {
	table := testdb.Table(t)
	client := testdb.Client(t, testdb.Endpoint(t))
	in := ingest.New(ingest.DefaultConfig(table), client, ingest.Options{Now: func() time.Time { return now }})
	var kev events.KinesisEvent
	for i := range 45 {
		kev.Records = append(kev.Records, events.KinesisEventRecord{
			EventSource: "aws:kinesis", EventSourceArn: "arn:aws:kinesis:us-east-1:000000000000:stream/s", EventID: fmt.Sprintf("shardId-000000000002:%d", i),
			Kinesis: events.KinesisRecord{Data: []byte(fmt.Sprintf(`{"id":"bad-%d"`, i)), SequenceNumber: fmt.Sprint(1000 + i),
				ApproximateArrivalTimestamp: events.SecondsEpochTime{Time: now.Add(-time.Duration(i+1) * time.Minute)}},
		})
	}
	if resp, err := in.Kinesis(loading(t), kev); err != nil || len(resp.BatchItemFailures) > 0 {
		t.Fatalf("%v %v", err, resp.BatchItemFailures)
	}
	h := handlerFor(t, table, testdb.Endpoint(t))
	q := url.Values{"limit": {"20"}}
	var got []Record
	for range 5 {
		req := events.APIGatewayV2HTTPRequest{Version: "2.0", RawPath: QuarantineRoute, RawQueryString: q.Encode()}
		req.RequestContext.HTTP.Method = "GET"
		resp, _ := h.HTTP(context.Background(), req)
		var r QuarantineResponse
		if resp.StatusCode != 200 || json.Unmarshal([]byte(resp.Body), &r) != nil {
			t.Fatalf("%d %s", resp.StatusCode, resp.Body)
		}
		got = append(got, r.Records...)
		if r.NextCursor == "" {
			break
		}
		q.Set("cursor", r.NextCursor)
	}
	// The default range is the last hour: the 45 records of the last 45 minutes.
	if len(got) != 45 {
		t.Fatalf("%d records, want 45", len(got))
	}
	for i, r := range got {
		seq := fmt.Sprint(1000 + i)
		if string(r.Raw) != fmt.Sprintf(`{"id":"bad-%d"`, i) || r.Origin["sequence_number"] != seq ||
			r.Origin["shard_id"] != "shardId-000000000002" || r.Origin["stream_arn"] == nil || r.Reason == "" {
			t.Fatalf("record %d: %+v", i, r)
		}
		if want := now.Add(-time.Duration(i+1) * time.Minute).Format(time.RFC3339Nano); r.ReceivedAt != want {
			t.Fatalf("record %d received %s, want %s", i, r.ReceivedAt, want)
		}
	}
}

// TestQuarantineShowsReplay: a record that a replay marked carries
// "replay" with the time, state and outcome, beside its unchanged fields;
// an unmarked record has no "replay" at all.
func TestQuarantineShowsReplay(t *testing.T) {
	table := testdb.Table(t)
	client := testdb.Client(t, testdb.Endpoint(t))
	in := ingest.New(ingest.DefaultConfig(table), client, ingest.Options{Now: func() time.Time { return now }})
	var kev events.KinesisEvent
	for i := range 2 {
		kev.Records = append(kev.Records, events.KinesisEventRecord{
			EventSource: "aws:kinesis", EventSourceArn: "arn:aws:kinesis:us-east-1:000000000000:stream/s", EventID: fmt.Sprintf("shardId-000000000002:%d", i),
			Kinesis: events.KinesisRecord{Data: []byte(fmt.Sprintf(`{"id":"bad-%d"`, i)), SequenceNumber: fmt.Sprint(1000 + i),
				ApproximateArrivalTimestamp: events.SecondsEpochTime{Time: now.Add(-time.Duration(i+1) * time.Minute)}},
		})
	}
	if resp, err := in.Kinesis(loading(t), kev); err != nil || len(resp.BatchItemFailures) > 0 {
		t.Fatalf("%v %v", err, resp.BatchItemFailures)
	}
	// Mark the newer record as a replay does.
	out, err := client.Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String(table)})
	if err != nil {
		t.Fatal(err)
	}
	replayed := now.Add(time.Minute)
	for _, it := range out.Items {
		if o, ok := it[schema.Origin].(*types.AttributeValueMemberM); !ok || str(o.Value["sequence_number"]) != "1000" {
			continue
		}
		_, err := client.UpdateItem(context.Background(), &dynamodb.UpdateItemInput{
			TableName:        aws.String(table),
			Key:              map[string]types.AttributeValue{schema.PK: it[schema.PK], schema.SK: it[schema.SK]},
			UpdateExpression: aws.String("SET #at = :at, #st = :st, #o = :o"),
			ExpressionAttributeNames: map[string]string{
				"#at": schema.ReplayedAt, "#st": schema.ReplayState, "#o": schema.ReplayOutcome,
			},
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":at": &types.AttributeValueMemberS{Value: replayed.Format(time.RFC3339Nano)},
				":st": &types.AttributeValueMemberS{Value: string(item.ReplayInvalid)},
				":o":  &types.AttributeValueMemberS{Value: "still invalid: body: is not JSON"},
			},
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	h := handlerFor(t, table, testdb.Endpoint(t))
	req := events.APIGatewayV2HTTPRequest{Version: "2.0", RawPath: QuarantineRoute}
	req.RequestContext.HTTP.Method = "GET"
	resp, _ := h.HTTP(context.Background(), req)
	var body struct {
		Records []map[string]json.RawMessage `json:"records"`
	}
	if resp.StatusCode != 200 || json.Unmarshal([]byte(resp.Body), &body) != nil || len(body.Records) != 2 {
		t.Fatalf("%d %s", resp.StatusCode, resp.Body)
	}
	for i, r := range body.Records {
		for _, f := range []string{"received_at", "reason", "raw", "origin"} {
			if r[f] == nil {
				t.Errorf("record %d has no %q: %v", i, f, r)
			}
		}
	}
	want := fmt.Sprintf(`{"at":%q,"state":"invalid","outcome":"still invalid: body: is not JSON"}`, replayed.Format(time.RFC3339Nano))
	if got := string(body.Records[0]["replay"]); got != want {
		t.Errorf("the marked record's replay is %s, want %s", got, want)
	}
	if r, ok := body.Records[1]["replay"]; ok {
		t.Errorf("the unmarked record has replay %s", r)
	}
}
