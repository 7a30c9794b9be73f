package ingest

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/shardline/shardline/testkit/kpltest"
)

// nullStore answers every call at once, so a benchmark measures the
// handler's own work: parsing, validation, keys, items, batching.
type nullStore struct{}

func (nullStore) BatchWriteItem(context.Context, *dynamodb.BatchWriteItemInput, ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error) {
	return &dynamodb.BatchWriteItemOutput{}, nil
}

func (nullStore) BatchGetItem(context.Context, *dynamodb.BatchGetItemInput, ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	return &dynamodb.BatchGetItemOutput{}, nil
}

func (nullStore) GetItem(context.Context, *dynamodb.GetItemInput, ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	return &dynamodb.GetItemOutput{}, nil
}

func (nullStore) UpdateItem(context.Context, *dynamodb.UpdateItemInput, ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	return &dynamodb.UpdateItemOutput{}, nil
}

func (nullStore) PutItem(context.Context, *dynamodb.PutItemInput, ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	return &dynamodb.PutItemOutput{}, nil
}

// event500 is a realistic event of about 500 bytes.
func event500(i int) []byte {
	b, _ := json.Marshal(map[string]any{
		"specversion": "1.0", "id": fmt.Sprintf("evt-%08d", i), "source": "iot/fleet-7", "type": "com.example.telemetry.reading",
		"subject": fmt.Sprintf("truck/DE-%04d", i%5000), "time": fixtureNow.Add(-time.Duration(i) * time.Millisecond).Format(time.RFC3339Nano),
		"datacontenttype": "application/json", "traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
		"data": map[string]any{"lat": 52.5200066, "lon": 13.404954, "speed_kmh": 71.5, "odometer": 123456789, "fuel": 0.62,
			"engine": map[string]any{"rpm": 1850, "temp_c": 88.5, "oil_bar": 3.9}, "tags": []string{"eu", "long-haul", "reefer"},
			"driver": "d-0042", "note": strings.Repeat("x", 40)},
	})
	return b
}

// BenchmarkHandlerPerEvent is the ingest handler's cost per event with
// storage excluded: a 1,000-record Kinesis batch of ~500-byte events.
func BenchmarkHandlerPerEvent(b *testing.B) {
	payloads := events500(1000)
	b.Logf("event size %d bytes", len(payloads[0]))
	benchmarkBatch(b, kinesisBatch(payloads...), len(payloads))
}

// BenchmarkHandlerPerEventKPL is the same 1,000 events in KPL aggregates
// of 100 sub-records each (about the 50 KB the KPL packs by default): what
// de-aggregation and its digest add per event.
func BenchmarkHandlerPerEventKPL(b *testing.B) {
	payloads := events500(1000)
	var aggregates [][]byte
	for i := 0; i < len(payloads); i += 100 {
		recs := make([]kpltest.Record, 0, 100)
		for _, p := range payloads[i : i+100] {
			recs = append(recs, kpltest.Record{PartitionKey: "truck", Data: p})
		}
		aggregates = append(aggregates, kpltest.Aggregate(recs))
	}
	b.Logf("aggregate size %d bytes", len(aggregates[0]))
	benchmarkBatch(b, kinesisBatch(aggregates...), len(payloads))
}

func events500(n int) [][]byte {
	payloads := make([][]byte, n)
	for i := range payloads {
		payloads[i] = event500(i)
	}
	return payloads
}

// benchmarkBatch reports the handler's cost per event of a batch of n
// events.
func benchmarkBatch(b *testing.B, batch events.KinesisEvent, n int) {
	h := New(DefaultConfig("bench"), nullStore{}, Options{Now: func() time.Time { return fixtureNow }})
	ctx := context.Background()
	if resp, _ := h.Kinesis(ctx, batch); len(resp.BatchItemFailures) != 0 { // warm the shard-record cache
		b.Fatal("failures")
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	start := time.Now()
	for b.Loop() {
		h.Kinesis(ctx, batch)
	}
	elapsed := time.Since(start)
	runtime.ReadMemStats(&after)
	events := float64(b.N * n)
	b.ReportMetric(float64(elapsed.Nanoseconds())/events, "ns/event")
	b.ReportMetric(float64(after.Mallocs-before.Mallocs)/events, "allocs/event")
	b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/events, "B/event")
}
