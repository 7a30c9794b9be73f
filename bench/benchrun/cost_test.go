package benchrun

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/shardline/shardline/bench/ddbstub"
	"github.com/shardline/shardline/internal/schema"
	"github.com/shardline/shardline/testkit/testddb"
)

// TestCostArithmetic prices a small workload worked out by hand.
func TestCostArithmetic(t *testing.T) {
	p := Prices{DynamoDBWriteUnitPerMillion: 0.625, DynamoDBReadUnitPerMillion: 0.125, DynamoDBStorageGBMonth: 0.25,
		KinesisShardHour: 0.015, KinesisPutUnitPerMillion: 0.014, KinesisExtendedShardHour: 0.02,
		LambdaArmGBSecond: 0.0000133334, LambdaRequestPerMillion: 0.2, S3PutPerThousand: 0.005,
		S3StandardGBMonth: 0.023, LogsIngestGB: 0.5, FirehoseIngestGB: 0.029}
	u := Usage{
		EventWRU: 1e6, GSIWRU: 1e6, // 2 WRU an event: $1.25
		HourMarkWRU: 1000, CounterWRU: 9000, // 10,000 WRU: $0.00625, 1% of the events'
		BookkeepingRRU:    2e6,  // $0.25
		TableGBMonth:      2,    // $0.50
		KinesisShardHours: 100,  // $1.50
		KinesisPutUnits:   1e6,  // $0.014
		S3Puts:            2000, // $0.01
		S3GBMonth:         10,   // $0.23
		LogBytes:          gib,  // $0.50
		Functions: []FunctionUsage{
			{Name: "ingest", MemoryMB: 512, Requests: 1e6, Seconds: 3000}, // $0.20 + 1,500 GB-s: $0.0200001
		},
	}
	lines := u.Lines(p, false)
	want := 1.25 + 0.00625 + 0.25 + 0.5 + 1.5 + 0.014 + 0.01 + 0.23 + 0.5 + 0.2 + 1500*0.0000133334
	if got := Total(lines); math.Abs(got-want) > 1e-9 {
		t.Errorf("total = %.9f, want %.9f; lines %+v", got, want, lines)
	}
	if got := u.BookkeepingShare(); math.Abs(got-0.01) > 1e-12 {
		t.Errorf("bookkeeping share = %v, want 0.01", got)
	}
	if top := Top(lines, 3); top[0].Item != "shard-hours" || top[0].USD != 1.5 {
		t.Errorf("top line = %+v, want Kinesis shard-hours at $1.50", top[0])
	}
	for _, l := range lines {
		if l.Quantity == 0 {
			t.Errorf("a zero line was kept: %+v", l)
		}
	}
	if n := len(u.Lines(p, true)); n <= len(lines) {
		t.Errorf("keepZero kept %d lines, without it %d", n, len(lines))
	}
}

// TestCostScaling checks what the model scales by time: touches and
// refreshes for a source every container sees, and one no container
// sees twice an hour.
func TestCostScaling(t *testing.T) {
	busy := SourceGroup{Count: 1, Rate: 1000}
	if got := touches(busy, 4, time.Hour); math.Abs(got-4) > 1e-9 {
		t.Errorf("touches of a busy source = %v, want 4 (every container, once)", got)
	}
	rare := SourceGroup{Count: 10, Rate: 1.0 / 3600}
	if got := touches(rare, 1, time.Hour); math.Abs(got-10) > 1e-9 {
		t.Errorf("touches of 10 sources with one event an hour on 1 container = %v, want 10", got)
	}
	// One event a second on one container re-reads every 61 s.
	if got := refreshes(SourceGroup{Count: 1, Rate: 1}, 1); math.Abs(got-3600.0/61) > 1e-9 {
		t.Errorf("refreshes = %v, want %v", got, 3600.0/61)
	}
	if got := kinesisShards(1000, 500); got != 2 {
		t.Errorf("kinesisShards(1000/s of 500 B) = %d, want 2 (800 records/s a shard)", got)
	}
}

// TestCostSmallSample runs the measurement on a small workload, end to
// end: the handlers on the stub and DynamoDB Local, then the pricing.
func TestCostSmallSample(t *testing.T) {
	ctx := context.Background()
	// The archive's 300 s window would close no batch in a short run.
	saved := archiveMapping
	archiveMapping.Window = 4 * time.Second
	defer func() { archiveMapping = saved }()
	stub := ddbstub.New(0)
	defer stub.Close()
	stub.GSIAttr, stub.GSIKeys, stub.GSIProjected = schema.GSIPK, []string{schema.GSIPK, schema.SK, schema.PK}, schema.Projected
	w := CostWorkload{Name: "small", Window: 12 * time.Second, Groups: []SourceGroup{
		{Prefix: "small/busy", Count: 1, Rate: 100}, {Prefix: "small/quiet-", Count: 20, Rate: 0.5}}}
	rep, err := measureCost(ctx, &strings.Builder{}, CostOptions{Workloads: []CostWorkload{w}},
		testddb.Client(t, testddb.Endpoint(t)), stub.URL, time.Now().UTC())
	if err != nil {
		t.Fatal(err)
	}
	r := rep.Workloads[0]
	m := r.Measured
	if m.Events == 0 || m.CounterEvents == 0 || m.ArchiveEvents == 0 {
		t.Fatalf("measured nothing: %+v", m)
	}
	if m.Events > 12*110 {
		t.Errorf("ingested %d events; the window holds about %d", m.Events, 12*110)
	}
	if int64(m.EventRequests) > stub.Requests.Load() {
		t.Errorf("counted %d event requests; the stub saw %d", m.EventRequests, stub.Requests.Load())
	}
	if m.ShardRecords.Writes == 0 || m.Catalogue.Writes == 0 || m.HourMarks.Writes == 0 || m.Counter.Writes == 0 {
		t.Errorf("a bookkeeping kind wrote nothing: %+v", m)
	}
	if m.Catalogue.Writes != m.Sources {
		t.Errorf("%d catalogue entries for %d sources: one each per day", m.Catalogue.Writes, m.Sources)
	}
	if m.HourMarks.Writes > m.Pairs {
		t.Errorf("%d hour marks for %d (container, source) pairs: at most one each in one hour", m.HourMarks.Writes, m.Pairs)
	}
	if m.Other.Writes != 0 {
		t.Errorf("%d writes of unknown keys", m.Other.Writes)
	}
	u := r.Usage
	if u.EventWRU < 0.99e6 || u.GSIWRU < 0.99e6 {
		t.Errorf("event and GSI WRU per million = %v, %v; want at least one each an event", u.EventWRU, u.GSIWRU)
	}
	if r.Total <= 0 || r.SeedTotal <= 0 || r.FirehoseTotal <= 0 || math.IsNaN(r.Total) {
		t.Errorf("totals: shardline %v, seed %v, Firehose %v", r.Total, r.SeedTotal, r.FirehoseTotal)
	}
	md := rep.Markdown()
	for _, s := range []string{"hour-index marks", "counts levels (links, packs, hour items)", "PUT payload units", "Firehose", "seed articles"} {
		if !strings.Contains(md, s) {
			t.Errorf("the table lacks %q", s)
		}
	}
}
