package benchrun

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"

	"github.com/shardline/shardline/local/kinesislocal"
	"github.com/shardline/shardline/pkg/producer"
)

// ProducerOptions configure the producer benchmark.
type ProducerOptions struct {
	Events     int // events each producer design puts; 0 skips the benchmark
	PutRecords int // events the one-PutRecord-per-event loop puts (its rate does not depend on the count)
	Shards     int // the stream's shards
}

// DefaultProducerOptions is what make bench runs.
var DefaultProducerOptions = ProducerOptions{Events: 20000, PutRecords: 2000, Shards: 4}

// ProducerRow is one way of putting events on a Kinesis stream.
type ProducerRow struct {
	Design          string  `json:"design"`
	Events          int     `json:"events"`
	Seconds         float64 `json:"seconds"`
	EventsPerSecond float64 `json:"events_per_second"`
	// Requests, Records and PutUnits are per 1,000 events: Kinesis API
	// requests, Kinesis records, and PUT payload units (25 KB of data each,
	// what Kinesis bills a put by).
	Requests float64 `json:"requests_per_1000_events"`
	Records  float64 `json:"records_per_1000_events"`
	PutUnits float64 `json:"put_units_per_1000_events"`
	Speedup  float64 `json:"speedup_vs_putrecord"`
}

// putUnit is a PUT payload unit: 25 KB.
const putUnit = 25 << 10

// putCounter counts what goes through a Kinesis client: requests, records
// and PUT payload units.
type putCounter struct {
	c                        *kinesis.Client
	requests, records, units atomic.Int64
}

func (p *putCounter) count(data []byte) {
	p.records.Add(1)
	p.units.Add(int64((len(data) + putUnit - 1) / putUnit))
}

func (p *putCounter) PutRecords(ctx context.Context, in *kinesis.PutRecordsInput, o ...func(*kinesis.Options)) (*kinesis.PutRecordsOutput, error) {
	p.requests.Add(1)
	out, err := p.c.PutRecords(ctx, in, o...)
	if err == nil {
		for i, r := range out.Records {
			if r.ErrorCode == nil {
				p.count(in.Records[i].Data)
			}
		}
	}
	return out, err
}

// measureProducer puts the same events on kinesalite three ways: one
// PutRecord per event, pkg/producer, and pkg/producer with KPL
// aggregation.
func measureProducer(ctx context.Context, out io.Writer, o ProducerOptions, now time.Time) ([]ProducerRow, error) {
	fmt.Fprintln(out, "producer: starting kinesalite ...")
	srv, err := kinesislocal.Start(ctx, kinesislocal.Options{})
	if err != nil {
		return nil, err
	}
	defer srv.Close()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	events := make([][]byte, max(o.Events, o.PutRecords))
	for i := range events {
		events[i] = payload(i, now.Add(-time.Duration(len(events)-i)*time.Millisecond))
	}
	var rows []ProducerRow
	for _, design := range []string{"one PutRecord per event (sequential)", "pkg/producer (PutRecords batches)", "pkg/producer, KPL aggregation"} {
		client := kinesislocal.Client(srv.Endpoint)
		name := fmt.Sprintf("bench-producer-%d", len(rows))
		if _, err := kinesislocal.CreateStream(ctx, client, name, o.Shards); err != nil {
			return nil, err
		}
		pc := &putCounter{c: client}
		n := o.Events
		fmt.Fprintf(out, "producer: %s, %d events ...\n", design, n)
		start := time.Now()
		switch {
		case strings.HasPrefix(design, "one PutRecord"):
			n = o.PutRecords
			start = time.Now()
			for i, ev := range events[:n] {
				pc.requests.Add(1)
				if _, err := client.PutRecord(ctx, &kinesis.PutRecordInput{StreamName: aws.String(name), Data: ev,
					PartitionKey: aws.String(fmt.Sprintf("evt-%08d", i))}); err != nil {
					return nil, fmt.Errorf("producer bench: PutRecord: %w", err)
				}
				pc.count(ev)
			}
		default:
			var opts []producer.KinesisOption
			if strings.Contains(design, "aggregation") {
				opts = append(opts, producer.WithAggregation())
			}
			p := producer.NewKinesis(pc, name, opts...)
			for _, ev := range events[:n] {
				if err := p.Put(ctx, ev); err != nil {
					return nil, fmt.Errorf("producer bench: Put: %w", err)
				}
			}
			if err := p.Close(ctx); err != nil {
				return nil, fmt.Errorf("producer bench: Close: %w", err)
			}
			if s := p.Stats(); s.Put != int64(n) || s.Failed != 0 {
				return nil, fmt.Errorf("producer bench: %d of %d events put, %d failed", s.Put, n, s.Failed)
			}
		}
		secs := time.Since(start).Seconds()
		per := 1000 / float64(n)
		rows = append(rows, ProducerRow{Design: design, Events: n, Seconds: secs, EventsPerSecond: float64(n) / secs,
			Requests: float64(pc.requests.Load()) * per, Records: float64(pc.records.Load()) * per, PutUnits: float64(pc.units.Load()) * per})
	}
	for i := range rows {
		rows[i].Speedup = rows[i].EventsPerSecond / rows[0].EventsPerSecond
	}
	return rows, nil
}

// producerMarkdown renders the producer rows.
func producerMarkdown(b *strings.Builder, rows []ProducerRow, shards int) {
	fmt.Fprintf(b, "\n## Producer: putting events on a Kinesis stream (kinesalite, %d shards)\n\n", shards)
	b.WriteString("| design | events | events/s | requests / 1,000 events | records / 1,000 events | PUT payload units / 1,000 events | vs PutRecord |\n|---|---:|---:|---:|---:|---:|---:|\n")
	for _, x := range rows {
		fmt.Fprintf(b, "| %s | %d | %.0f | %.1f | %.1f | %.1f | %.1f× |\n", x.Design, x.Events, x.EventsPerSecond, x.Requests, x.Records, x.PutUnits, x.Speedup)
	}
	b.WriteString("\nThe same ~500-byte events (the ingest benchmark's) put three ways on kinesalite on this machine, each into a fresh stream: a loop of `PutRecord`, one request per event (sequential, so its rate does not depend on how many it puts; it puts fewer to keep the run short); `pkg/producer` with its defaults (`PutRecords` of up to 500 records, 50 ms linger, one request in flight); and the same with `WithAggregation()` (KPL aggregated records of at most 51,200 bytes). Requests are Kinesis API requests, PUT payload units the 25 KB chunks of record data Kinesis bills puts by (a record of up to 25 KB is one). kinesalite applies no shard limits, so events/s is this machine's, not a stream's: on AWS a shard takes 1,000 records or 1 MB a second, and aggregation, which puts about a hundred of these events in a record, lifts the records limit.\n")
}
