package heatsim

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/shardline/shardline/internal/adapt"
	"github.com/shardline/shardline/internal/catalog"
	"github.com/shardline/shardline/internal/shardmap"
	"github.com/shardline/shardline/pkg/bucketing"
	"github.com/shardline/shardline/testkit/testddb"
)

func TestMain(m *testing.M) { testddb.Main(m) }

// at is 2026-11-22 at the clock time hh:mm:ss(.fff), UTC.
func at(t *testing.T, clock string) time.Time {
	t.Helper()
	c, err := time.Parse("15:04:05.999", clock)
	if err != nil {
		t.Fatal(err)
	}
	return time.Date(2026, 11, 22, c.Hour(), c.Minute(), c.Second(), c.Nanosecond(), time.UTC)
}

// TestSchedulingIsTheRegistrys: the simulator's writers record raises in
// their in-memory shard record exactly as shardmap.Registry does on DynamoDB
// Local: the same step starts, a pending step raised in place rather than
// followed by another, a raise the record already holds and one that would
// start on the next day refused. Two writers take turns, on each side.
func TestSchedulingIsTheRegistrys(t *testing.T) {
	ctx := context.Background()
	table := testddb.Table(t)
	now := time.Time{}
	floor := adapt.Counts{Shards: 4, GSIShards: 1}
	sim := newAdaptive(Adaptive{Floor: floor, Writers: 2})
	var regs []*shardmap.Registry
	for range 2 {
		client := testddb.Client(t, testddb.Endpoint(t))
		regs = append(regs, &shardmap.Registry{Client: client, Table: table, NewDay: catalog.Lister(client, table),
			Now: func() time.Time { return now },
			Config: shardmap.Config{Shards: bucketing.Counts{Default: floor.Shards}, GSIShards: bucketing.Counts{Default: floor.GSIShards},
				Retention: 24 * time.Hour, Carry: true}})
	}
	day := "2026-11-22"
	for i, c := range []struct {
		clock   string
		n, g    int
		inPlace bool // when the record takes it
	}{
		{"10:00:30", 4, 2, false},       // a step from 10:08 (10:07:30, rounded up)
		{"10:00:50", 8, 8, true},        // 10:07:50 rounds up to 10:08 too: raised in place
		{"10:00:59.999", 8, 16, true},   // still 10:08, the GSI count alone
		{"10:01:00", 16, 16, false},     // 10:09: a new step
		{"10:01:10", 8, 8, false},       // the record holds more: refused
		{"10:01:59", 16, 32, true},      // 10:09 again
		{"11:53:00.001", 32, 32, false}, // 12:01
		{"23:51:59", 64, 64, false},     // 23:59, the day's last minute
		{"23:52:00", 128, 128, false},   // would start on the next day: refused
	} {
		now = at(t, c.clock)
		w := sim.writers[i%2]
		sim.schedule(w, "hot", now)
		to := adapt.Counts{Shards: c.n, GSIShards: c.g}
		got := sim.raise(w, "hot", now, to, to, "test")
		want, wantRaised, err := regs[i%2].Raise(ctx, events("hot"), day, c.n, c.g)
		if err != nil {
			t.Fatal(err)
		}
		if got != wantRaised {
			t.Fatalf("%s: raise to %d/%d: the simulator recorded it %v, the registry %v", c.clock, c.n, c.g, got, wantRaised)
		}
		if !got {
			continue
		}
		x := sim.raises[len(sim.raises)-1]
		step := want.Last()
		if x.From != dayStart(now).Add(time.Duration(step.From)*time.Minute) || x.Shards != step.Shards || x.GSI != step.GSIShards ||
			x.InPlace != c.inPlace {
			t.Fatalf("%s: the simulator recorded %+v; the registry's last step is %+v (in place: %v)", c.clock, x, step, c.inPlace)
		}
	}
	stored, _, err := regs[0].Lookup(ctx, events("hot"), day)
	if err != nil {
		t.Fatal(err)
	}
	if sched := sim.scheds[[2]string{"hot", day}]; !slices.Equal(sched, stored) {
		t.Fatalf("the simulator's record %+v, the registry's %+v", sched, stored)
	}
	want := bucketing.Schedule{{From: 0, Shards: 4, GSIShards: 1}, {From: 608, Shards: 8, GSIShards: 16},
		{From: 609, Shards: 16, GSIShards: 32}, {From: 721, Shards: 32, GSIShards: 32}, {From: 1439, Shards: 64, GSIShards: 64}}
	if !slices.Equal(stored, want) {
		t.Fatalf("record %+v, want %+v", stored, want)
	}
}

// TestRampRaisesReplayOnTheRegistry: the raises the eight-writer linear
// ramp records, replayed at their times on a registry over DynamoDB Local,
// are each taken, and leave the steps, in place or added, that the
// simulator reports.
func TestRampRaisesReplayOnTheRegistry(t *testing.T) {
	ctx := context.Background()
	r := ramp(false, 8)
	now := time.Time{}
	client, table := testddb.Client(t, testddb.Endpoint(t)), testddb.Table(t)
	reg := &shardmap.Registry{Client: client, Table: table, NewDay: catalog.Lister(client, table), Now: func() time.Time { return now },
		Config: shardmap.Config{Shards: bucketing.Counts{Default: 4}, GSIShards: bucketing.Counts{Default: 1}, Retention: time.Hour}}
	steps := 1
	inPlace := 0
	for _, x := range r.Raises {
		now = x.Recorded
		sched, raised, err := reg.Raise(ctx, events(x.Source), bucketing.Day(now), x.Shards, x.GSI)
		if err != nil {
			t.Fatal(err)
		}
		if !x.InPlace {
			steps++
		} else {
			inPlace++
		}
		last := sched.Last()
		if !raised || len(sched) != steps || x.From != dayStart(now).Add(time.Duration(last.From)*time.Minute) ||
			last.Shards != x.Shards || last.GSIShards != x.GSI {
			t.Fatalf("raise %+v: the registry took it %v, its schedule %+v", x, raised, sched)
		}
	}
	if inPlace == 0 {
		t.Fatalf("no raise in place among %+v", r.Raises)
	}
}

// TestAdaptiveDefaultsAndQuietSource: the floor is ingest's default counts,
// and a source that stays quiet is never raised: its page costs one query.
func TestAdaptiveDefaultsAndQuietSource(t *testing.T) {
	d := AdaptiveDesign(Adaptive{})
	if d.Name != "shardline, adaptive from 4/1" || d.Adapt.Floor != (adapt.Counts{Shards: 4, GSIShards: 1}) {
		t.Fatalf("design %q, floor %+v", d.Name, d.Adapt.Floor)
	}
	w := Workload{Sources: []Source{{Name: "quiet", Rate: 200}}, Duration: 5 * time.Minute, Start: start, ItemKB: 1}
	r := Run(w, []Design{d}, 0)[0]
	if len(r.Raises) != 0 || r.ThrottledPct != 0 || r.ReadRequests != 1 {
		t.Fatalf("a quiet source: %+v", r)
	}
}

// TestRaisesFollowTheRecord: under both ramps, with one writer and eight,
// every raise's table count takes effect a lead after it was recorded
// (rounded up to a minute; later for a pending step raised in place), on
// the same day; its GSI count, when it raised that, applies Lead - CacheFor
// sooner, as shardmap.InEffect has writers apply it; counts never fall.
func TestRaisesFollowTheRecord(t *testing.T) {
	for _, exp := range []bool{false, true} {
		for _, writers := range []int{1, 8} {
			r := ramp(exp, writers)
			if len(r.Raises) == 0 {
				t.Fatalf("exponential %v, %d writers: no raise", exp, writers)
			}
			prev := Raise{Shards: 4, GSI: 1}
			for i, x := range r.Raises {
				lead := x.From.Sub(x.Recorded)
				if lead <= shardmap.Lead || !x.InPlace && lead > shardmap.Lead+time.Minute || x.From.Second() != 0 ||
					bucketing.Day(x.From) != bucketing.Day(x.Recorded) {
					t.Errorf("raise %d %+v: effective %v after it was recorded", i, x, lead)
				}
				if !x.GSIFrom.IsZero() && !x.GSIFrom.Equal(x.From.Add(-(shardmap.Lead - shardmap.CacheFor))) {
					t.Errorf("raise %d %+v: GSI count from %v", i, x, x.GSIFrom)
				}
				if i > 0 && (x.InPlace != x.From.Equal(prev.From) || x.From.Before(prev.From)) {
					t.Errorf("raise %d %+v after %+v", i, x, prev)
				}
				if x.Shards < prev.Shards || x.GSI < prev.GSI || (x.Shards == prev.Shards && x.GSI == prev.GSI) ||
					x.GSI > adapt.DefaultMax || x.Shards > adapt.DefaultMax {
					t.Errorf("raise %d %+v after %+v", i, x, prev)
				}
				prev = x
			}
		}
	}
}

// TestWritersSplitTheRate: each writer writes 1/W of the source's items and
// tells its policy of its own share, its throttled items and the write
// units of the rest only; the items add up.
func TestWritersSplitTheRate(t *testing.T) {
	st := newAdaptive(Adaptive{Writers: 3})
	var seen []*recorder
	for _, w := range st.writers {
		r := &recorder{}
		w.policy = r
		seen = append(seen, r)
	}
	total := 0
	for _, b := range st.batches("s", start, 1000) {
		if b.cur != (adapt.Counts{Shards: 4, GSIShards: 1}) {
			t.Errorf("a writer placed under %+v", b.cur)
		}
		st.observe("s", start, b, 2, 0.5)
	}
	for _, r := range seen {
		if r.s.Items < 333 || r.s.Items > 334 || r.s.Throttled < 166 || r.s.Throttled > 167 ||
			r.s.WCU != 2*float64(r.s.Items-r.s.Throttled) || r.s.GSIWCU != r.s.WCU {
			t.Errorf("a writer saw %+v", r.s)
		}
		total += r.s.Items
	}
	if total != 1000 {
		t.Fatalf("the writers saw %d items", total)
	}
}

type recorder struct{ s adapt.Sample }

func (r *recorder) Observe(_ string, _ time.Time, _ adapt.Counts, s adapt.Sample) { r.s = s }
func (r *recorder) Measure(string, time.Time, adapt.Counts) (adapt.Measured, bool) {
	return adapt.Measured{}, false
}
func (r *recorder) ForDemand(string, time.Time, adapt.Counts, adapt.Counts, shardmap.Measure, int, bool) (adapt.Decision, bool) {
	return adapt.Decision{}, false
}
