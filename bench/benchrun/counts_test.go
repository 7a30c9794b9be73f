package benchrun

import (
	"context"
	"testing"
	"time"

	"github.com/shardline/shardline/testkit/testddb"
)

// TestCountsWriteCost runs the counter's write measurement at a small
// scale on DynamoDB Local: the invocations the mapping makes of five
// minutes at 100 events/s are exactly predictable (four per 30 s and
// stream shard: the 10 s batching window and the 15 s tumbling window),
// each is one update, the hour's count is exact (checked inside), and the
// cost per event stays under the limit. The last 30 s go through
// the real ingest handler, one period of the windows (a minute, 6,000
// events, cost twice the writes for no check that 3,000 do not make).
func TestCountsWriteCost(t *testing.T) {
	ctx := context.Background()
	client := testddb.Client(t, testddb.Endpoint(t))
	o := CountsOptions{Rate: 100, Types: 10, Measured: 30 * time.Second, Prefill: 4*time.Minute + 30*time.Second}
	hourEnd := time.Now().UTC().Truncate(time.Hour)
	in, err := ingestMeasured(ctx, client, testddb.Endpoint(t), o, hourEnd)
	if err != nil {
		t.Fatal(err)
	}
	if in.shards != 1 || len(in.recs) != 3000 || in.recordBytes < 500 {
		t.Fatalf("stream: %d shards, %d records of %d bytes", in.shards, len(in.recs), in.recordBytes)
	}
	rows, err := measureWrites(ctx, client, o, hourEnd, in)
	if err != nil {
		t.Fatal(err)
	}
	want := map[[2]any]int{
		{1, partPrefill}: 36, {1, partIngest}: 4, {1, partHour}: 40,
		{4, partPrefill}: 144, {4, partIngest}: 16, {4, partHour}: 160,
	}
	if len(rows) != len(want) {
		t.Fatalf("%d rows, want %d", len(rows), len(want))
	}
	for _, r := range rows {
		if n := want[[2]any{r.StreamShards, r.Part}]; r.Invocations != n || r.Updates != n || r.Reads != 0 {
			t.Errorf("%d shards, %s: %d invocations, %d updates, %d reads; want %d, %d, 0", r.StreamShards, r.Part, r.Invocations, r.Updates, r.Reads, n, n)
		}
		if r.WCU < r.Updates || r.WCUPerEvent > limitWCUPerEvent {
			t.Errorf("%d shards, %s: %d WCU for %d updates, %.4f an event", r.StreamShards, r.Part, r.WCU, r.Updates, r.WCUPerEvent)
		}
	}
}

// TestHeatItem builds the hot hour's counter item on DynamoDB Local and
// checks the model built on it. It simulates 10 stream shards where the
// benchmark simulates heatShards (100): the item's counters and their
// sizes at the rate do not depend on how many shards counted them, and
// the model adds the watermarks of the shards it was not built with
// (HeatRow.ItemBytes), so that its rows are the same from 10 as from 100,
// at a tenth of the writes.
func TestHeatItem(t *testing.T) {
	o := CountsOptions{Types: 10, HotRate: 50000}
	h, err := measureHeat(context.Background(), testddb.Client(t, testddb.Endpoint(t)), o, 10, 1300, time.Now().UTC().Truncate(time.Hour).Add(-time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if h.Counters != 100 || h.WatermarkBytes != 27 || h.CountBytesAtRate != 4 || h.ItemBytesAtRate <= h.ItemBytes {
		t.Fatalf("item: %d counters, %d bytes a watermark, %d bytes a count at rate, %d bytes, %d at rate",
			h.Counters, h.WatermarkBytes, h.CountBytesAtRate, h.ItemBytes, h.ItemBytesAtRate)
	}
	if h.BatchLimit != (6<<20)/1300 || len(h.Rows) != 4 || h.Rows[1].StreamShards != 72 {
		t.Fatalf("model: batch limit %d, rows %+v", h.BatchLimit, h.Rows)
	}
	for _, r := range h.Rows {
		if r.WCUPerSecond != r.UpdatesPerSecond*float64(r.WCUPerUpdate) || r.WCUPerUpdate != (r.ItemBytes+1023)/1024 {
			t.Errorf("row %+v does not add up", r)
		}
	}
	// docs/keys.md: the counter key stays under a quarter of the ceiling at
	// the claimed 50,000 events/s, on its write shards' partitions and on
	// twice as many.
	for _, r := range h.Rows[:3] {
		t.Logf("%d stream shards: %.1f updates/s of %d bytes, %.0f WCU/s", r.StreamShards, r.UpdatesPerSecond, r.ItemBytes, r.WCUPerSecond)
		if r.WCUPerSecond >= limitPartitionWCU/4 {
			t.Errorf("%d stream shards: %.0f WCU/s on the counter key, a quarter of the ceiling or more", r.StreamShards, r.WCUPerSecond)
		}
	}
	if h.row(h.BreakEvenShards).WCUPerSecond < limitPartitionWCU || h.row(h.BreakEvenShards-1).WCUPerSecond >= limitPartitionWCU {
		t.Errorf("break-even at %d shards is not where the limit is crossed", h.BreakEvenShards)
	}
}

// TestTargets: a target is met only when every figure is within its limit.
func TestTargets(t *testing.T) {
	r := &CountsReport{Rate: 100, Types: 10,
		Write: []CountsWriteRow{
			{StreamShards: 1, Part: partHour, Events: 1000, WCU: 10, ReportedWCU: 10},
			{StreamShards: 4, Part: partHour, Events: 1000, WCU: 40, ReportedWCU: 51},
		},
		Charts:      []CountsChartRow{{Kind: chartDay, Requests: 1, RCU: 27, PricedRCU: 51}, {Kind: chartMonth, Requests: 6}},
		MonthAtRate: 41,
		Heat:        CountsHeat{Rate: 50000, Rows: []HeatRow{{WCUPerSecond: 100}, {WCUPerSecond: 200}, {WCUPerSecond: 999}}},
	}
	got := r.check()
	if len(got) != 4 {
		t.Fatalf("%d targets", len(got))
	}
	for i, met := range []bool{false, false, false, true} {
		if got[i].Met != met {
			t.Errorf("target %q: met %v, want %v (%s)", got[i].Target, got[i].Met, met, got[i].Measured)
		}
	}
}
