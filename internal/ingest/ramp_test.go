package ingest

import (
	"context"
	"log/slog"
	"math"
	"testing"
	"time"

	"github.com/shardline/shardline/internal/schema"
	"github.com/shardline/shardline/internal/shardmap"
	"github.com/shardline/shardline/local/syncbuf"
	"github.com/shardline/shardline/pkg/bucketing"
	"github.com/shardline/shardline/testkit/faultproxy"
	"github.com/shardline/shardline/testkit/simtime"
	"github.com/shardline/shardline/testkit/testddb"
)

// TestAdaptiveShardingUnderARamp ramps one source from 100 to 5,000
// events/s of 1 KB over ten minutes behind the fault proxy's partition
// model, whose keys take DynamoDB's nominal 1,000 WCU/s: its one GSI key is
// over within two minutes, its four table keys after eight. It checks that
// adaptive sharding ends the throttling within a bounded number of raises,
// that no event is lost or duplicated, and that reads during and after the
// ramp return every event once on all paths.
//
// Scaled 250 times smaller than life (traffic, the model's keys, and the
// nominal figure the containers start from: see scaled), on the
// simulation's virtual clock (sim_test.go); rampOn runs a ramp of any
// keys, scale and peak. Two Kinesis shards, each with its own warm
// container, share the traffic; the containers must agree on one
// schedule.
//
// The ramp is on keys of the nominal ceiling; on keys of a quarter of it
// see TestAdaptiveShardingUnderARampOnQuarterKeys.
//
// What it cannot avoid, it measures: events stamped before a table raise
// takes effect stay on the keys they were placed on, so the backlog built
// while the source outran them drains at their rate, and throttling lasts
// until it has. The test keeps the traffic at 5,000 events/s until then
// and for three minutes after.
func TestAdaptiveShardingUnderARamp(t *testing.T) {
	t.Parallel()
	rampOn(t, rampCase{scale: 250, keyWCU: 1000, to: 5_000})
}

// TestAdaptiveShardingUnderARampOnQuarterKeys is the ramp on keys of a
// quarter of the nominal figure, 250 WCU/s at life size (5 a key scaled
// 50 times), from 100 to 1,250 events/s, the policy told only the nominal
// figure: it must learn the keys' ceiling from their throttling. The peak,
// 25 WCU/s scaled, needs 5 keys of each at the ceiling, 8 at the target.
// It took four or five steps until the GSI's keys counted what writers
// stored on older table keys, a key's ceiling was the mean of two
// minutes' readings, a raise along the ramp was sized for the ramp
// continued, and the hold after a raise was per index (docs/adaptive.md,
// "A ramp on keys of a quarter of the nominal figure"); the same verdicts
// as the nominal ramp hold.
//
// It is the longest simulation: the backlog built before its table's
// raise drains on the old table keys, so it plays 35 to 43 simulated
// minutes, about 50,000 events (about 120 CPU-s).
func TestAdaptiveShardingUnderARampOnQuarterKeys(t *testing.T) {
	t.Parallel()
	rampOn(t, rampCase{scale: 50, keyWCU: 250, to: 1_250})
}

// rampCase is a ramp's keys and peak: scale is how many times smaller
// than life the traffic, the model's keys and the nominal figure are;
// keyWCU what each key of the model takes and to the events a second from
// the end of the ramp on, both at life size.
type rampCase struct {
	scale, keyWCU, to float64
}

// rampOn runs the ramp of c and checks its verdicts.
func rampOn(t *testing.T, rc rampCase) {
	scale, keyWCU, to := rc.scale, rc.keyWCU, rc.to
	const (
		source  = "ramp"
		from    = 100.0 // events a second (at life size) at the start
		rampFor = 10 * time.Minute
		midway  = 12 * time.Minute // when the reads during the ramp happen
		tail    = 3 * time.Minute  // traffic after the backlog has drained
		giveUp  = 60 * time.Minute // the backlog must drain by then
		batch   = 500
		invoke  = 60 * time.Second
	)
	start := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	table := testddb.Table(t)
	endpoint := testddb.Endpoint(t)
	proxy := faultproxy.For(t, endpoint)
	simtime.Run(t, start, func(t *testing.T, clk *simtime.Clock) {
		model := &faultproxy.Partitions{WCU: keyWCU / scale, Burst: 5, Keys: []string{schema.PK, schema.GSIPK}, Now: clk.Seen}
		var judged verdicts
		proxy.SetRule(judged.wrap(t, model.Rule()))
		var logs syncbuf.Buffer
		queues := fleet(2, DefaultConfig(table), clk, proxy.URL, scaled(clk, scale, slog.New(slog.NewJSONHandler(&logs, nil))))
		traffic := &producer{queues: queues, start: start, rate: func(at time.Duration) float64 {
			f := min(1, float64(at)/float64(rampFor))
			return (from + (to-from)*f) / scale
		}}
		c := clk.Client(endpoint, 0)
		acked := func(until time.Time) map[string]bool { return between(traffic.all, start, until) }

		stop := poll(t, queues, source, batch, invoke)
		var samples []sample
		var maxAge, drained, end time.Duration
		var readMid bool
		for {
			now := clk.Now().Sub(start)
			n, oldest := waiting(queues)
			if now >= giveUp {
				stop()
				for _, m := range logLines(logs.String(), "shards raised") {
					t.Logf("raise: %v", m)
				}
				t.Fatalf("the backlog has not drained after %v: %d records waiting", giveUp, n)
			}
			if !readMid && now >= midway && !oldest.IsZero() {
				// Every event older than the oldest one waiting is stored: a
				// reader must see exactly those, while writes go on.
				readMid = true
				readsOnce(t, "during the ramp", c, table, clk.Now, source, start, oldest, acked(oldest))
			}
			if end == 0 || now < end {
				traffic.until(now)
			} else if n == 0 {
				break
			}
			if !oldest.IsZero() {
				age := clk.Now().Sub(oldest)
				maxAge = max(maxAge, age)
				if drained == 0 && now > rampFor+time.Minute && age < 10*time.Second {
					drained, end = now, now+time.Minute+tail
				}
			}
			seen, held := model.Seen.Load(), model.Throttled.Load()
			if len(samples)%60 == 0 {
				t.Logf("%v: %d events, waiting %d, judged %d held %d", now.Round(time.Second), len(traffic.all), n, seen, held)
			}
			time.Sleep(time.Second)
			samples = append(samples, sample{at: now, seen: model.Seen.Load() - seen, held: model.Throttled.Load() - held})
		}
		stop()
		finish := clk.Now()
		all := traffic.all

		// The raises: logged, bounded, and enough for 5,000 events a second.
		raises := logLines(logs.String(), "shards raised")
		for _, m := range raises {
			t.Logf("raise: %v/%v -> %v/%v, effective %v: %v", m["shards_from"], m["gsi_shards_from"], m["shards_to"], m["gsi_shards_to"], m["effective"], m["reason"])
		}
		reg := &shardmap.Registry{Client: c, Table: table}
		sched, found, err := reg.Lookup(context.Background(), bucketing.Stream{Space: bucketing.Events, Source: source}, bucketing.Day(start))
		if err != nil || !found {
			t.Fatalf("shard record: %v %v", found, err)
		}
		t.Logf("schedule: %+v", sched)
		if len(raises) == 0 || len(sched) < 2 {
			t.Fatalf("%d raises logged, schedule %+v: nothing was raised", len(raises), sched)
		}
		// The writers decide on their summed demand, planned a lead ahead,
		// and a step pending or just applied must be outgrown twice over:
		// three steps at most, not a doubling at every throttled batch. (A
		// step raised in place before it applies, once the keys' ceiling
		// is measured or the ramp shows, is still one step to readers.)
		if len(sched) > 4 {
			t.Errorf("%d raises, %d steps: the policy compounded", len(raises), len(sched)-1)
		}
		// Enough keys to carry the peak at their ceiling.
		need := int(math.Ceil(to / keyWCU))
		if l := sched.Last(); l.Shards < need || l.GSIShards < need {
			t.Errorf("last step %+v: %.0f events/s need %d of each at the ceiling", l, to, need)
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
			"backlog drained at %v; oldest record waited %v",
			len(all), finish.Sub(start).Round(time.Second), allHeld, allSeen, first.Format(time.TimeOnly), raisedHeld, raisedSeen,
			drained.Round(time.Second), maxAge.Round(time.Second))
		if allHeld == 0 {
			t.Fatal("nothing was throttled: the model did not bite")
		}
		// Throttling stops: once the backlog has drained, under 1 %.
		if tailSeen == 0 || float64(tailHeld) >= 0.01*float64(tailSeen) {
			t.Errorf("after the backlog drained: %d of %d writes throttled, want under 1%%", tailHeld, tailSeen)
		}

		// Nothing lost, nothing twice, on every path.
		readsOnce(t, "after the ramp", c, table, clk.Now, source, start, finish.Add(time.Minute), acked(finish.Add(time.Minute)))
		if n := countEvents(t, c, table, source, bucketing.Day(start), sched.MaxShards()); n != len(all) {
			t.Errorf("%d event items in the table, want %d", n, len(all))
		}
	})
}
