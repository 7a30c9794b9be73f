package ingest

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/shardline/shardline/internal/schema"
	"github.com/shardline/shardline/internal/shardmap"
	"github.com/shardline/shardline/local/syncbuf"
	"github.com/shardline/shardline/pkg/bucketing"
	"github.com/shardline/shardline/testkit/faultproxy"
	"github.com/shardline/shardline/testkit/testddb"
)

// TestAdaptiveShardingUnderARamp ramps one source from 100 to 5,000
// events/s over ten minutes behind the fault proxy's partition model
// (1,000 WCU/s per key value, table and GSI): its one GSI key is over
// within two minutes, its four table keys after eight. It checks that adaptive sharding ends the
// throttling within a bounded number of raises, that no event is lost or
// duplicated, and that reads during and after the ramp return every event
// once on all paths.
//
// Compressed: the clock of the handlers, the shard records and the model
// runs speed times faster than the wall, so the 7-minute lead of a raise
// takes seconds; traffic and key ceilings are both scale times smaller, so
// the ratio of load to ceiling is the real one, and so are the policy's
// thresholds, which are counts of items. Two Kinesis shards, each with its
// own warm container, share the traffic; the containers must agree on one
// schedule.
//
// What it cannot avoid, it measures: events stamped before the first raise
// takes effect stay on the day's first 4 base-table keys, so the backlog
// built while the source outran them drains at their rate, and throttling
// lasts until it has. The test keeps the traffic at 5,000 events/s until
// then and for three minutes after.
//
// Why not issue 14's 20,000: scaled down a thousand times to fit this
// machine, the source's first minute is a few events a second, too few
// in a window to read a rise from, and the first step undershoots; the
// events of the seven minutes before it takes effect then take longer to
// drain through four keys than the source takes to build a new backlog.
// bench/heatsim runs the 50,000 events/s ramp without scaling.
func TestAdaptiveShardingUnderARamp(t *testing.T) {
	t.Parallel() // a simulation: bound to its clock, not the CPU (see simClock)
	const (
		scale   = 250.0 // traffic and key ceilings, this many times smaller than life
		speed   = 15.0  // simulated seconds per wall-clock second: 300 events a wall second at the peak, which a loaded machine still carries through DynamoDB Local
		source  = "ramp"
		from    = 100.0   // events a second (at life size) at the start
		to      = 5_000.0 // and from the end of the ramp on
		rampFor = 10 * time.Minute
		midway  = 12 * time.Minute // when the reads during the ramp happen
		tail    = 3 * time.Minute  // traffic after the backlog has drained
		giveUp  = 60 * time.Minute // the backlog must drain by then
		batch   = 100              // records per invocation
		invoke  = 500 * time.Millisecond
	)
	start := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	table := testddb.Table(t)
	endpoint := testddb.Endpoint(t)
	proxy := faultproxy.For(t, endpoint)
	clk := &simClock{start: start, real: time.Now(), speed: speed}
	model := &faultproxy.Partitions{WCU: bucketing.PartitionWCU / scale, Burst: 5,
		Keys: []string{schema.PK, schema.GSIPK}, Now: clk.now}
	var judged verdicts
	proxy.SetRule(judged.wrap(t, model.Rule()))

	cfg := DefaultConfig(table)
	var logs syncbuf.Buffer
	queues := fleet(t, 2, cfg, proxy.URL, clk, bucketing.PartitionWCU/scale, slog.New(slog.NewJSONHandler(&logs, nil)))

	rate := func(at time.Duration) float64 { // events per simulated second, scaled
		f := min(1, float64(at)/float64(rampFor))
		return (from + (to-from)*f) / scale
	}
	var (
		all     []rampEvent
		due     float64 // events owed, fractional
		last    time.Duration
		samples []sample
		maxAge  time.Duration // the oldest record waiting, as Lambda's iterator age
	)
	generate := func(now time.Duration) {
		for s := last; s < now; s += 100 * time.Millisecond {
			due += rate(s) / 10
		}
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
	oldest := func() (time.Time, bool) { // the oldest record not yet acknowledged
		var at time.Time
		for _, q := range queues {
			if len(q.records) > 0 && (at.IsZero() || q.records[0].at.Before(at)) {
				at = q.records[0].at
			}
		}
		return at, !at.IsZero()
	}
	acked := func(until time.Time) map[string]bool {
		want := map[string]bool{}
		for _, e := range all {
			if e.at.Before(until) {
				want[e.id] = true
			}
		}
		return want
	}

	var readMid bool
	var drained, stop time.Duration
	var behind int // times the writers fell behind again after catching up
	for {
		now := clk.now().Sub(start)
		if now >= giveUp {
			for _, line := range strings.Split(logs.String(), "\n") {
				if strings.Contains(line, "shards raised") {
					t.Log(line)
				}
			}
			t.Fatalf("the backlog has not drained after %v: %d records waiting", giveUp, len(queues[0].records)+len(queues[1].records))
		}
		if !readMid && now >= midway {
			// Every event older than the oldest one waiting is stored: a
			// reader must see exactly those, while writes go on.
			readMid = true
			until, _ := oldest()
			readsOnce(t, "during the ramp", endpoint, table, clk.now, source, start, until, acked(until))
		}
		if stop == 0 || now < stop {
			generate(now)
		} else if _, waiting := oldest(); !waiting {
			break
		}
		if at, ok := oldest(); ok {
			age := clk.now().Sub(at)
			maxAge = max(maxAge, age)
			switch {
			case drained == 0 && now > rampFor+time.Minute && age < 10*time.Second:
				drained, stop = now, now+time.Minute+tail
			case drained != 0 && now < stop && age > 30*time.Second:
				// Caught up, then behind again: on a machine short of
				// CPU the loop stalls (a wall second is 15 simulated)
				// and then delivers the backlog that built meanwhile
				// faster than the source sends. The tail measures the
				// source's traffic with the writers caught up: it starts
				// again once they are. Writers whose keys cannot carry
				// the source never catch up, and fail at giveUp.
				behind++
				drained, stop = 0, 0
			}
		}
		seen, held := model.Seen.Load(), model.Throttled.Load()
		if len(samples) == 0 || now.Truncate(time.Minute) != samples[len(samples)-1].at.Truncate(time.Minute) {
			t.Logf("%v: %d events, waiting %d+%d, judged %d held %d", now.Round(time.Second), len(all), len(queues[0].records), len(queues[1].records), seen, held)
		}
		deliverAll(t, queues, source, batch, invoke)
		samples = append(samples, sample{at: now, seen: model.Seen.Load() - seen, held: model.Throttled.Load() - held})
		time.Sleep(20 * time.Millisecond)
	}
	end := clk.now()

	// The raises: logged, bounded, and enough for 5,000 events a second.
	var raises int
	for _, line := range strings.Split(logs.String(), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) == nil && m["msg"] == "shards raised" {
			raises++
			t.Logf("raise: %v/%v -> %v/%v, effective %v: %v", m["shards_from"], m["gsi_shards_from"], m["shards_to"], m["gsi_shards_to"], m["effective"], m["reason"])
		}
	}
	reg := &shardmap.Registry{Client: testddb.Client(t, endpoint), Table: table}
	sched, found, err := reg.Lookup(context.Background(), bucketing.Stream{Space: bucketing.Events, Source: source}, bucketing.Day(start))
	if err != nil || !found {
		t.Fatalf("shard record: %v %v", found, err)
	}
	t.Logf("schedule: %+v", sched)
	if raises == 0 || len(sched) < 2 {
		t.Fatalf("%d raises logged, schedule %+v: nothing was raised", raises, sched)
	}
	// The writers decide on their summed demand, planned a lead ahead,
	// and a pending step must be outgrown twice over: a raise or two, not
	// a doubling at every throttled batch.
	if raises > 3 || len(sched) > 3 {
		t.Errorf("%d raises, %d steps: the policy compounded", raises, len(sched))
	}
	// Enough keys to carry the peak at their ceiling; the plan aims at
	// 70 %, from a rise read a lead ahead of the peak.
	need := int(math.Ceil(to / bucketing.PartitionWCU))
	if l := sched.Last(); l.Shards < need || l.GSIShards < need {
		t.Errorf("last step %+v: 5,000 events/s need %d of each at the ceiling", l, need)
	}

	var tailSeen, tailHeld, allSeen, allHeld int64
	for _, s := range samples {
		allSeen += s.seen
		allHeld += s.held
		if s.at >= drained+time.Minute { // a minute to settle after catching up
			tailSeen += s.seen
			tailHeld += s.held
		}
	}
	first := dayStart(start).Add(time.Duration(sched[1].From) * time.Minute)
	raisedSeen, raisedHeld := judged.from(first)
	t.Logf("throttled/judged per simulated minute:%s", timeline(samples))
	t.Logf("%d events in %v simulated; %d of %d writes throttled; of events from %s, when the first raise took effect, %d of %d; "+
		"backlog drained at %v (behind again %d times before); oldest record waited %v",
		len(all), end.Sub(start).Round(time.Second), allHeld, allSeen, first.Format(time.TimeOnly), raisedHeld, raisedSeen,
		drained.Round(time.Second), behind, maxAge.Round(time.Second))
	if allHeld == 0 {
		t.Fatal("nothing was throttled: the model did not bite")
	}
	// Throttling stops: once the backlog has drained, under 1 %.
	if tailSeen == 0 || float64(tailHeld) >= 0.01*float64(tailSeen) {
		t.Errorf("after the backlog drained: %d of %d writes throttled, want under 1%%", tailHeld, tailSeen)
	}

	// Nothing lost, nothing twice, on every path.
	readsOnce(t, "after the ramp", endpoint, table, clk.now, source, start, end.Add(time.Minute), acked(end.Add(time.Minute)))
	e := &env{table: table, client: testddb.Client(t, endpoint)}
	if n := len(e.itemsIn(t, "E#")); n != len(all) {
		t.Errorf("%d event items in the table, want %d", n, len(all))
	}
}
