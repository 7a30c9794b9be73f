package query

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/shardline/shardline/internal/ingest"
	"github.com/shardline/shardline/internal/item"
	"github.com/shardline/shardline/internal/schema"
	"github.com/shardline/shardline/testkit/kpltest"
	"github.com/shardline/shardline/testkit/testddb"
)

// TestQuarantineListing: quarantined records come back, newest first, with
// raw bytes, reason and origin, each once across pages.
func TestQuarantineListing(t *testing.T) {
	table := testddb.Table(t)
	client := testddb.Client(t, testddb.Endpoint(t))
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
	h := handlerFor(t, table, testddb.Endpoint(t))
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
	table := testddb.Table(t)
	client := testddb.Client(t, testddb.Endpoint(t))
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
		if o, ok := it[schema.Origin].(*types.AttributeValueMemberM); !ok || schema.S(o.Value["sequence_number"]) != "1000" {
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
	h := handlerFor(t, table, testddb.Endpoint(t))
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

// TestQuarantineShowsSubIndex: the parts of a KPL aggregate that were
// quarantined share its sequence number and are told apart by sub_index
// (and index, inside a sub-record's array); a corrupt aggregate has
// neither. Paging one record at a time returns each once.
func TestQuarantineShowsSubIndex(t *testing.T) {
	table := testddb.Table(t)
	client := testddb.Client(t, testddb.Endpoint(t))
	in := ingest.New(ingest.DefaultConfig(table), client, ingest.Options{Now: func() time.Time { return now }})
	agg := kpltest.Aggregate([]kpltest.Record{
		{PartitionKey: "p", Data: []byte(`{"specversion":"1.0","id":"ok","source":"s","type":"t"}`)},
		{PartitionKey: "p", Data: []byte(`{"id":"not json"`)},
		{PartitionKey: "p", Data: []byte(`[{"specversion":"1.0","id":"ok2","source":"s","type":"t"},{"id":"no-type","source":"s"}]`)},
	})
	corrupt := append(bytes.Clone(agg[:len(agg)-1]), agg[len(agg)-1]^1)
	var kev events.KinesisEvent
	for i, data := range [][]byte{agg, corrupt} {
		kev.Records = append(kev.Records, events.KinesisEventRecord{
			EventSource: "aws:kinesis", EventSourceArn: "arn:aws:kinesis:us-east-1:000000000000:stream/s", EventID: fmt.Sprintf("shardId-000000000002:%d", i),
			Kinesis: events.KinesisRecord{Data: data, SequenceNumber: fmt.Sprint(2000 + i),
				ApproximateArrivalTimestamp: events.SecondsEpochTime{Time: now.Add(-time.Minute)}},
		})
	}
	if resp, err := in.Kinesis(context.Background(), kev); err != nil || len(resp.BatchItemFailures) > 0 {
		t.Fatalf("%v %v", err, resp.BatchItemFailures)
	}
	h := handlerFor(t, table, testddb.Endpoint(t))
	q := url.Values{"limit": {"1"}}
	got := map[string]Record{}
	for range 10 {
		req := events.APIGatewayV2HTTPRequest{Version: "2.0", RawPath: QuarantineRoute, RawQueryString: q.Encode()}
		req.RequestContext.HTTP.Method = "GET"
		resp, _ := h.HTTP(context.Background(), req)
		var r QuarantineResponse
		if resp.StatusCode != 200 || json.Unmarshal([]byte(resp.Body), &r) != nil {
			t.Fatalf("%d %s", resp.StatusCode, resp.Body)
		}
		for _, rec := range r.Records {
			k := fmt.Sprintf("%v %v %v", rec.Origin["sequence_number"], rec.Origin["sub_index"], rec.Origin["index"])
			if _, dup := got[k]; dup {
				t.Fatalf("%s listed twice", k)
			}
			got[k] = rec
		}
		if r.NextCursor == "" {
			break
		}
		q.Set("cursor", r.NextCursor)
	}
	want := map[string]string{
		"2000 1 <nil>":     `{"id":"not json"`,
		"2000 2 1":         `{"id":"no-type","source":"s"}`,
		"2001 <nil> <nil>": string(corrupt),
	}
	if len(got) != len(want) {
		t.Fatalf("listed %v, want %v", got, want)
	}
	for k, raw := range want {
		if r, ok := got[k]; !ok || string(r.Raw) != raw {
			t.Errorf("%s: %+v, want raw %q", k, r, raw)
		}
	}
	if r := got["2001 <nil> <nil>"]; !strings.HasPrefix(r.Reason, "kpl: ") {
		t.Errorf("corrupt aggregate's reason %q", r.Reason)
	}
}

// TestQuarantineLargeBodyDoesNotBlockTheListing: a 5 MiB API body that is
// not JSON is quarantined whole (gzip-compressed), between Kinesis records
// received before and after it. Listed through the Lambda runtime's own
// encoder, every page fits the 6 MB payload; the large record comes back
// with its first MaxAnswerRawBytes bytes, raw_size and truncated, and the
// listing goes on past it to every other record, once each. Before, its
// page was 6.99 MB and the listing could never pass it.
func TestQuarantineLargeBodyDoesNotBlockTheListing(t *testing.T) {
	table := testddb.Table(t)
	client := testddb.Client(t, testddb.Endpoint(t))
	var kev events.KinesisEvent
	for i := range 6 {
		seq := fmt.Sprint(7000 + i)
		kev.Records = append(kev.Records, events.KinesisEventRecord{
			EventSource: "aws:kinesis", EventSourceArn: "arn:aws:kinesis:us-east-1:000000000000:stream/s", EventID: "shardId-000000000001:" + seq,
			Kinesis: events.KinesisRecord{Data: []byte(`{"id":"bad-` + seq), SequenceNumber: seq,
				ApproximateArrivalTimestamp: events.SecondsEpochTime{Time: now.Add(-time.Duration(2*i+1) * time.Minute)}},
		})
	}
	in := ingest.New(ingest.DefaultConfig(table), client, ingest.Options{Now: func() time.Time { return now }})
	if resp, err := in.Kinesis(loading(t), kev); err != nil || len(resp.BatchItemFailures) > 0 {
		t.Fatalf("%v %v", err, resp.BatchItemFailures)
	}
	body := strings.Repeat("not json ", 5<<20/9+1)[:5<<20]
	req := events.APIGatewayV2HTTPRequest{Version: "2.0", RouteKey: "POST /v1/events", RawPath: EventsRoute, Body: body,
		Headers: map[string]string{"content-type": "application/json"}}
	req.RequestContext.HTTP.Method = "POST"
	req.RequestContext.RequestID = "big-body"
	req.RequestContext.TimeEpoch = now.Add(-6 * time.Minute).UnixMilli() // between the records
	if resp, err := in.HTTP(loading(t), req); err != nil || resp.StatusCode != 400 {
		t.Fatalf("POST: %v %d %.300s", err, resp.StatusCode, resp.Body)
	}
	h := handlerFor(t, table, testddb.Endpoint(t))
	for _, order := range []string{"desc", "asc"} {
		q := url.Values{"limit": {"1000"}, "order": {order}}
		var got []string
		for pages := 1; ; pages++ {
			if pages > 20 {
				t.Fatalf("%s: more than 20 pages, got %v", order, got)
			}
			payload, resp := invoke(t, h, QuarantineRoute, q)
			if len(payload) >= lambdaLimit || resp.StatusCode != 200 {
				t.Fatalf("%s page %d: status %d, payload %d bytes (limit %d): %.300s", order, pages, resp.StatusCode, len(payload), lambdaLimit, resp.Body)
			}
			var qr QuarantineResponse
			if err := json.Unmarshal([]byte(resp.Body), &qr); err != nil {
				t.Fatal(err)
			}
			for _, rec := range qr.Records {
				if rec.Origin["request_id"] == "big-body" {
					if string(rec.Raw) != body[:MaxAnswerRawBytes] || rec.RawSize != len(body) || !rec.Truncated {
						t.Fatalf("the large record: %d raw bytes (a prefix of the body: %v), raw_size %d, truncated %v; want %d, raw_size %d, truncated",
							len(rec.Raw), strings.HasPrefix(body, string(rec.Raw)), rec.RawSize, rec.Truncated, MaxAnswerRawBytes, len(body))
					}
					got = append(got, "big")
					continue
				}
				if seq, _ := rec.Origin["sequence_number"].(string); string(rec.Raw) != `{"id":"bad-`+seq || rec.Truncated {
					t.Fatalf("record %s: %+v", seq, rec)
				}
				got = append(got, rec.Origin["sequence_number"].(string))
			}
			if qr.NextCursor == "" {
				break
			}
			q.Set("cursor", qr.NextCursor)
		}
		want := []string{"7000", "7001", "7002", "big", "7003", "7004", "7005"}
		if order == "asc" {
			want = reversed(want)
		}
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Fatalf("%s: listed %v, want %v", order, got, want)
		}
	}
}

// TestQuarantineShowsACutRecordsDigest: a 1 MiB record that does not
// compress is kept cut (DynamoDB holds 400 KB an item) and listed with
// truncated, its full size and the SHA-256 of every byte received, so an
// operator can tell it was cut and check a copy from its origin.
func TestQuarantineShowsACutRecordsDigest(t *testing.T) {
	table := testddb.Table(t)
	in := ingest.New(ingest.DefaultConfig(table), testddb.Client(t, testddb.Endpoint(t)), ingest.Options{Now: func() time.Time { return now }})
	data := make([]byte, 1<<20)
	r := rand.New(rand.NewPCG(28, 3))
	for i := range data {
		data[i] = byte(r.Uint32())
	}
	kev := events.KinesisEvent{Records: []events.KinesisEventRecord{{
		EventSource: "aws:kinesis", EventSourceArn: "arn:aws:kinesis:us-east-1:000000000000:stream/s", EventID: "shardId-000000000001:7",
		Kinesis: events.KinesisRecord{Data: data, SequenceNumber: "7", ApproximateArrivalTimestamp: events.SecondsEpochTime{Time: now.Add(-time.Minute)}},
	}}}
	if resp, err := in.Kinesis(loading(t), kev); err != nil || len(resp.BatchItemFailures) > 0 {
		t.Fatalf("%v %v", err, resp.BatchItemFailures)
	}
	_, resp := invoke(t, handlerFor(t, table, testddb.Endpoint(t)), QuarantineRoute, url.Values{})
	var qr QuarantineResponse
	if resp.StatusCode != 200 || json.Unmarshal([]byte(resp.Body), &qr) != nil || len(qr.Records) != 1 {
		t.Fatalf("%d %.300s", resp.StatusCode, resp.Body)
	}
	rec := qr.Records[0]
	sum := sha256.Sum256(data)
	if !rec.Truncated || rec.RawSize != len(data) || rec.RawSHA256 != hex.EncodeToString(sum[:]) || !bytes.HasPrefix(data, rec.Raw) || len(rec.Raw) == 0 {
		t.Fatalf("truncated %v, raw_size %d, raw_sha256 %q, %d raw bytes: want a cut record of %d bytes and its digest",
			rec.Truncated, rec.RawSize, rec.RawSHA256, len(rec.Raw), len(data))
	}
}
