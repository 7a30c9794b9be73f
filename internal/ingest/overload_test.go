package ingest

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/shardline/shardline/internal/query"
	"github.com/shardline/shardline/internal/schema"
	"github.com/shardline/shardline/internal/shardmap"
	"github.com/shardline/shardline/local/syncbuf"
	"github.com/shardline/shardline/pkg/bucketing"
	"github.com/shardline/shardline/testkit/faultproxy"
	"github.com/shardline/shardline/testkit/testddb"
)

// TestGSIOverloadIsSpreadOnce is issue 19's measurement, as a test: one
// source asking 720 write units a second of partitions of 250 WCU/s. Its 4
// table keys carry 180 WCU/s each, within their ceiling; its one GSI key
// is asked 720, three times over. (The events were 2 KB, 3 units
// each; here they are under 1 KB, so that a key scaled down still takes 25
// of them a second and pacing is not measured in fractions of an item.) Four
// ingest containers, each fed by its own Kinesis shard, write it at once
// behind the fault proxy's partition model.
//
// What must hold: the GSI is spread to what the demand needs, once (within
// twice the 3 keys that carry 720 WCU/s at the ceiling), the table is left
// alone; a dashboard page of the source (newest 100 of the last hour)
// costs at most 16 requests; the writers pace to what the keys take (at
// most one throttled attempt per event written, under 10 % of attempts
// throttled once the raise has taken effect); and every event is stored
// once.
//
// Compressed as the ramp test is (ramp_test.go): the model's clock, the
// handlers' and their pacers' run speed times faster than the wall, and
// traffic and key ceilings are scale times smaller.
func TestGSIOverloadIsSpreadOnce(t *testing.T) {
	t.Parallel() // a simulation: bound to its clock, not the CPU (see simClock)
	const (
		scale    = 15.0 // traffic and key ceilings, this many times smaller than life
		speed    = 15.0 // simulated seconds per wall-clock second
		keyWCU   = 250.0
		rate     = 720.0 // events a second at life size
		eventWCU = 1.0
		source   = "overload"
		load     = 4 * time.Minute // the raise takes effect after about 2
		giveUp   = 30 * time.Minute
		batch    = 100
		invoke   = 500 * time.Millisecond
	)
	start := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	table := testddb.Table(t)
	endpoint := testddb.Endpoint(t)
	proxy := faultproxy.For(t, endpoint)
	clk := &simClock{start: start, real: time.Now(), speed: speed}
	model := &faultproxy.Partitions{WCU: keyWCU / scale, Keys: []string{schema.PK, schema.GSIPK}, Now: clk.now}
	proxy.SetRule(model.Rule())

	cfg := DefaultConfig(table)
	var logs syncbuf.Buffer
	queues := fleet(t, 4, cfg, proxy.URL, clk, keyWCU/scale, slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	for _, q := range queues {
		q.pad = 500
	}

	var all []rampEvent
	var due float64
	var last time.Duration
	generate := func(now time.Duration) {
		due += (rate / scale) * (now - last).Seconds()
		k := int(due)
		due -= float64(k)
		for i := range k {
			at := start.Add(last + (now-last)*time.Duration(i)/time.Duration(k))
			e := rampEvent{id: fmt.Sprintf("ev-%06d", len(all)), at: at.Truncate(time.Millisecond)}
			q := queues[len(all)%len(queues)]
			q.records = append(q.records, e)
			all = append(all, e)
		}
		last = now
	}
	waiting := func() (n int, oldest time.Time) {
		for _, q := range queues {
			n += len(q.records)
			if len(q.records) > 0 && (oldest.IsZero() || q.records[0].at.Before(oldest)) {
				oldest = q.records[0].at
			}
		}
		return n, oldest
	}
	var samples []sample
	var maxAge time.Duration
	for {
		now := clk.now().Sub(start)
		if now >= giveUp {
			n, _ := waiting()
			t.Fatalf("the backlog has not drained after %v: %d records waiting", giveUp, n)
		}
		if now < load {
			generate(now)
		} else if n, _ := waiting(); n == 0 {
			break
		}
		if _, oldest := waiting(); !oldest.IsZero() {
			maxAge = max(maxAge, clk.now().Sub(oldest))
		}
		seen, held := model.Seen.Load(), model.Throttled.Load()
		deliverAll(t, queues, source, batch, invoke)
		samples = append(samples, sample{at: now, seen: model.Seen.Load() - seen, held: model.Throttled.Load() - held})
		time.Sleep(20 * time.Millisecond)
	}
	end := clk.now()

	// Spread once, to what the demand needs.
	var raises []string
	for _, line := range strings.Split(logs.String(), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) == nil && m["msg"] == "adaptive sharding: demand reported" {
			raises = append(raises, fmt.Sprintf("demand at %v: %.1f, sum %.1f of %v", m["time"], m["wcu"], m["sum_wcu"], m["writers"]))
		}
		if json.Unmarshal([]byte(line), &m) == nil && m["msg"] == "shards raised" {
			raises = append(raises, fmt.Sprintf("%v/%v -> %v/%v: %v", m["shards_from"], m["gsi_shards_from"], m["shards_to"], m["gsi_shards_to"], m["reason"]))
		}
	}
	t.Logf("raises:\n  %s", strings.Join(raises, "\n  "))
	reg := &shardmap.Registry{Client: testddb.Client(t, endpoint), Table: table}
	stream := bucketing.Stream{Space: bucketing.Events, Source: source}
	sched, _, err := reg.Lookup(context.Background(), stream, bucketing.Day(start))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("schedule: %+v", sched)
	demand := rate * eventWCU
	needed := int(demand/keyWCU) + 1 // keys that carry the demand at the ceiling: 3
	final := sched.Last()
	if final.GSIShards < needed || final.GSIShards > 2*needed {
		t.Errorf("GSI shards end at %d, want %d to %d: the demand needs %d at the ceiling", final.GSIShards, needed, 2*needed, needed)
	}
	if final.Shards != sched[0].Shards {
		t.Errorf("table shards raised %d -> %d, though its keys carried the demand", sched[0].Shards, final.Shards)
	}
	if len(sched) > 2 {
		t.Errorf("%d steps: the source was raised more than once", len(sched)-1)
	}

	// A dashboard page of the source: newest 100 of the last hour.
	r := &query.Reader{Client: testddb.Client(t, endpoint), Table: table, Now: clk.now}
	pg, err := r.Events(context.Background(), query.Params{Source: source, From: end.Add(-time.Hour), To: end, Limit: 100, Order: query.Desc})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("newest 100 of the last hour: %d events, plan %+v", len(pg.Items), pg.Plan)
	if len(pg.Items) != 100 || pg.Plan.Requests > 16 {
		t.Errorf("newest 100 of the last hour: %d events in %d requests, want 100 in at most 16", len(pg.Items), pg.Plan.Requests)
	}

	// Paced: few throttled attempts, and fewer still once the raise took effect.
	attempts, throttled := model.Seen.Load(), model.Throttled.Load()
	effective := time.Duration(0)
	if len(sched) > 1 {
		// A step's GSI count applies Lead - CacheFor before its From
		// (shardmap.InEffect).
		effective = time.Duration(sched[1].From)*time.Minute - (shardmap.Lead - shardmap.CacheFor) - 10*time.Hour
	}
	var afterSeen, afterHeld int64
	for _, s := range samples {
		if effective > 0 && s.at >= effective {
			afterSeen += s.seen
			afterHeld += s.held
		}
	}
	t.Logf("%d events in %v simulated, the oldest waited %v; %d attempts, %d throttled: %.2f per event; from %v on: %d of %d throttled; throttled/judged per minute:%s",
		len(all), end.Sub(start).Round(time.Second), maxAge.Round(time.Second), attempts, throttled, float64(throttled)/float64(len(all)),
		effective, afterHeld, afterSeen, timeline(samples))
	if throttled == 0 {
		t.Fatal("nothing was throttled: the model did not bite")
	}
	if float64(throttled) > float64(len(all)) {
		t.Errorf("%d throttled attempts for %d events: more than one per event", throttled, len(all))
	}
	if afterSeen == 0 || float64(afterHeld) >= 0.10*float64(afterSeen) {
		t.Errorf("after the raise took effect: %d of %d attempts throttled, want under 10%%", afterHeld, afterSeen)
	}

	// Nothing lost, nothing twice.
	e := &env{table: table, client: testddb.Client(t, endpoint)}
	if n := len(e.itemsIn(t, "E#")); n != len(all) {
		t.Errorf("%d event items in the table, want %d", n, len(all))
	}
	want := map[string]bool{}
	for _, ev := range all {
		want[ev.id] = true
	}
	readsOnce(t, "after the overload", endpoint, table, clk.now, source, start, end.Add(time.Minute), want)
}
