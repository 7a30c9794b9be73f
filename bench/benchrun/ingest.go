// Package benchrun is `make bench`: it measures shardline against the naive
// write path of the seed articles in the same run, on DynamoDB Local and on
// a latency stub, prices dashboard queries on both read paths, measures
// what exact counts cost against issue 10's targets (the counts_*.go
// files), and times a cold start, then writes a table as Markdown and JSON.
package benchrun

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/shardline/shardline/internal/ingest"
)

// counting wraps a client, counting requests and summing the write capacity
// DynamoDB reports.
type counting struct {
	c        *dynamodb.Client
	mu       sync.Mutex
	requests int
	wcu      float64
}

func (c *counting) add(cc ...types.ConsumedCapacity) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.requests++
	for _, x := range cc {
		c.wcu += aws.ToFloat64(x.CapacityUnits)
	}
}

// BatchWriteItem counts the call and its consumed capacity.
func (c *counting) BatchWriteItem(ctx context.Context, in *dynamodb.BatchWriteItemInput, o ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error) {
	out, err := c.c.BatchWriteItem(ctx, in, o...)
	if err != nil {
		c.add()
		return out, err
	}
	c.add(out.ConsumedCapacity...)
	return out, nil
}

// PutItem counts the call and its consumed capacity.
func (c *counting) PutItem(ctx context.Context, in *dynamodb.PutItemInput, o ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	in.ReturnConsumedCapacity = types.ReturnConsumedCapacityTotal
	out, err := c.c.PutItem(ctx, in, o...)
	if err != nil || out.ConsumedCapacity == nil {
		c.add()
		return out, err
	}
	c.add(*out.ConsumedCapacity)
	return out, nil
}

// UpdateItem counts the call and its consumed capacity.
func (c *counting) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	in.ReturnConsumedCapacity = types.ReturnConsumedCapacityTotal
	out, err := c.c.UpdateItem(ctx, in, o...)
	if err != nil || out.ConsumedCapacity == nil {
		c.add()
		return out, err
	}
	c.add(*out.ConsumedCapacity)
	return out, nil
}

// BatchGetItem counts the call.
func (c *counting) BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	c.add()
	return c.c.BatchGetItem(ctx, in, o...)
}

// GetItem counts the call.
func (c *counting) GetItem(ctx context.Context, in *dynamodb.GetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	c.add()
	return c.c.GetItem(ctx, in, o...)
}

// IngestRow is one measured write path on one endpoint.
type IngestRow struct {
	Endpoint         string  `json:"endpoint"`
	Design           string  `json:"design"`
	Events           int     `json:"events"`
	Seconds          float64 `json:"seconds"`
	EventsPerSecond  float64 `json:"events_per_second"`
	RequestsPerEvent float64 `json:"requests_per_event"`
	WCUPerEvent      float64 `json:"wcu_per_event"`
	Speedup          float64 `json:"speedup_vs_naive"`
}

// payload is a ~500-byte telemetry event, as in the handler benchmark.
func payload(i int, at time.Time) []byte {
	return telemetry(fmt.Sprintf("evt-%08d", i), "iot/fleet-7", "com.example.telemetry.reading", i, at)
}

// telemetry is payload's event with the given id, source and type.
func telemetry(id, source, typ string, i int, at time.Time) []byte {
	b, _ := json.Marshal(map[string]any{
		"specversion": "1.0", "id": id, "source": source, "type": typ,
		"subject": fmt.Sprintf("truck/DE-%04d", i%5000), "time": at.Format(time.RFC3339Nano), "datacontenttype": "application/json",
		"data": map[string]any{"lat": 52.5200066, "lon": 13.404954, "speed_kmh": 71.5, "odometer": 123456789, "fuel": 0.62,
			"engine": map[string]any{"rpm": 1850, "temp_c": 88.5, "oil_bar": 3.9}, "tags": []string{"eu", "long-haul", "reefer"},
			"driver": "d-0042", "note": "0123456789012345678901234567890123456789012345678901234567890123456789"},
	})
	return b
}

// shardline sends n records as one Kinesis batch through the real handler.
func shardline(ctx context.Context, client *dynamodb.Client, table string, n int, now time.Time) (IngestRow, error) {
	c := &counting{c: client}
	cfg := ingest.DefaultConfig(table)
	h := ingest.New(cfg, c, ingest.Options{Now: func() time.Time { return now }})
	batch := func(first, n int) events.KinesisEvent {
		var ev events.KinesisEvent
		for i := first; i < first+n; i++ {
			seq := strconv.Itoa(1_000_000 + i)
			ev.Records = append(ev.Records, events.KinesisEventRecord{EventSource: "aws:kinesis", EventID: "shardId-0:" + seq,
				Kinesis: events.KinesisRecord{Data: payload(i, now.Add(-time.Duration(first+n-i)*time.Millisecond)), SequenceNumber: seq,
					ApproximateArrivalTimestamp: events.SecondsEpochTime{Time: now}}})
		}
		return ev
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	// A warm container: the first invocation has opened its connections and
	// read the source's shard record. Its requests are not counted.
	if _, err := h.Kinesis(ctx, batch(n, 200)); err != nil {
		return IngestRow{}, err
	}
	c.requests, c.wcu = 0, 0
	ev := batch(0, n)
	start := time.Now()
	resp, err := h.Kinesis(ctx, ev)
	elapsed := time.Since(start)
	if err != nil {
		return IngestRow{}, err
	}
	if len(resp.BatchItemFailures) > 0 {
		return IngestRow{}, fmt.Errorf("shardline: %d records failed", len(resp.BatchItemFailures))
	}
	return row("shardline (BatchWriteItem, sharded keys)", n, elapsed, c), nil
}

// naive is the seed articles' write path: one PutItem per event, one after
// another, every event under the partition key "EVENTS" and the sort key
// `${Date.now()}#${id}`.
func naive(ctx context.Context, client *dynamodb.Client, table string, n int, now time.Time) (IngestRow, error) {
	c := &counting{c: client}
	start := time.Now()
	for i := range n {
		_, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: naiveItem(i, now)})
		if err != nil {
			return IngestRow{}, fmt.Errorf("naive put %d: %w", i, err)
		}
	}
	return row("seed articles (PutItem, one key, sequential)", n, time.Since(start), c), nil
}

// naiveItem is the seed articles' item for event i: the key EVENTS, the
// sort key `${Date.now()}#${id}`, the type, subject and data.
func naiveItem(i int, now time.Time) map[string]types.AttributeValue {
	var e map[string]any
	_ = json.Unmarshal(payload(i, now), &e)
	data, _ := json.Marshal(e["data"])
	return map[string]types.AttributeValue{
		"pk":        &types.AttributeValueMemberS{Value: "EVENTS"},
		"sk":        &types.AttributeValueMemberS{Value: fmt.Sprintf("%d#%s", time.Now().UnixMilli(), e["id"])},
		"eventType": &types.AttributeValueMemberS{Value: e["type"].(string)},
		"subject":   &types.AttributeValueMemberS{Value: e["subject"].(string)},
		"data":      &types.AttributeValueMemberS{Value: string(data)},
	}
}

func row(design string, n int, d time.Duration, c *counting) IngestRow {
	return IngestRow{Design: design, Events: n, Seconds: d.Seconds(), EventsPerSecond: float64(n) / d.Seconds(),
		RequestsPerEvent: float64(c.requests) / float64(n), WCUPerEvent: c.wcu / float64(n)}
}
