package heatsim

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/shardline/shardline/internal/adapt"
	"github.com/shardline/shardline/internal/catalog"
	"github.com/shardline/shardline/internal/ingest"
	"github.com/shardline/shardline/internal/shardmap"
	"github.com/shardline/shardline/pkg/bucketing"
)

// Adaptive is shardline with adaptive write sharding (issue 14), run as the
// ingest function runs it. Each of Writers writer containers has its own
// internal/adapt Policy and its own shardmap.Registry over the design's
// shard records, one per source and UTC day, which the day's first write
// creates at Floor. Every simulated second each writer
//
//   - places its share of each source's events by shardmap.InEffect: the
//     table's count of the event's time, and the GSI count that applies to
//     every write by now;
//   - feeds its policy what it saw under those counts: its items, the write
//     units of those not throttled, and the items throttled on their first
//     attempt;
//   - asks its policy for a raise and records it with Registry.Raise: a step
//     from shardmap.Lead after now, rounded up to a minute, or the last step
//     raised in place if it starts no earlier than that.
//
// A writer knows the record as its registry last read or wrote it, for up
// to shardmap.CacheFor, so with several writers one may ask for a raise
// another has already recorded; the registry then records nothing.
type Adaptive struct {
	// Floor is the configured counts (SHARDS, GSI_SHARDS or their
	// overrides); zero fields take ingest's defaults.
	Floor adapt.Counts
	// Writers is the number of writer containers; each writes 1/Writers of
	// every source's events. 0 is 1.
	Writers int
}

// AdaptiveDesign is shardline's design with adaptive write sharding.
func AdaptiveDesign(a Adaptive) Design {
	a.Floor = a.floor()
	name := fmt.Sprintf("shardline, adaptive from %d/%d", a.Floor.Shards, a.Floor.GSIShards)
	if a.Writers > 1 {
		name += fmt.Sprintf(", %d writers", a.Writers)
	}
	return Design{Name: name, Adapt: &a}
}

func (a Adaptive) floor() adapt.Counts {
	f := a.Floor
	if f.Shards < 1 {
		f.Shards = ingest.DefaultShards
	}
	if f.GSIShards < 1 {
		f.GSIShards = ingest.DefaultGSIShards
	}
	return f
}

// Raise is a raise an adaptive design's writer recorded in the shard record.
type Raise struct {
	Source   string    `json:"source"`
	Recorded time.Time `json:"recorded"` // when the writer raised
	// From is when the step's table count takes effect, for events of that
	// time on. GSIFrom is when its GSI count first applied to a write
	// (shardmap.InEffect); zero when the raise left the GSI count as it was,
	// or the count did not apply before the run ended.
	From    time.Time `json:"effective"`
	GSIFrom time.Time `json:"gsi_effective,omitzero"`
	Shards  int       `json:"shards"`
	GSI     int       `json:"gsi_shards"`
	// InPlace says the raise grew the counts of a step not yet started
	// instead of adding a step.
	InPlace bool   `json:"in_place"`
	Reason  string `json:"reason"`

	raisedGSI bool
}

// decider is what a writer asks for raises: an *adapt.Policy, or a test's
// fake.
type decider interface {
	Observe(source string, now time.Time, cur adapt.Counts, s adapt.Sample)
	Measure(source string, now time.Time, cur adapt.Counts) (adapt.Measured, bool)
	ForDemand(source string, now time.Time, cur, last adapt.Counts, demand shardmap.Measure, writers int, throttled bool) (adapt.Decision, bool)
}

// writer is one writer container: its policy, and its registry, which
// caches the shard records as the ingest function's does.
type writer struct {
	policy decider
	reg    *shardmap.Registry
}

// adaptive is an adaptive design's state during one run.
type adaptive struct {
	Adaptive
	now     time.Time // the simulated second: every registry's clock
	writers []*writer
	// scheds is every shard record as last written, by (source, day).
	scheds     map[[2]string]bucketing.Schedule
	raises     []Raise
	unrecorded int
	// reports is what each writer last measured of each source, as the
	// demand item beside its shard record holds it (shardmap.Demand).
	reports map[string]map[*writer]report
}

// report is one writer's measure of a source's demand.
type report struct {
	at time.Time
	m  shardmap.Measure
}

func newAdaptive(a Adaptive) *adaptive {
	a.Floor = a.floor()
	st := &adaptive{Adaptive: a, scheds: map[[2]string]bucketing.Schedule{}, reports: map[string]map[*writer]report{}}
	db := records{}
	cfg := shardmap.Config{
		Shards:    bucketing.Counts{Default: a.Floor.Shards},
		GSIShards: bucketing.Counts{Default: a.Floor.GSIShards},
		Retention: ingest.DefaultRetentionDays * 24 * time.Hour,
		Carry:     true, // as ingest sets it when adaptive sharding is on
	}
	for range max(1, a.Writers) {
		reg := &shardmap.Registry{Client: db, Table: "heatsim", Config: cfg, Now: func() time.Time { return st.now },
			NewDay: catalog.Lister(db, "heatsim")} // as ingest's registry
		st.writers = append(st.writers, &writer{policy: &adapt.Policy{}, reg: reg})
	}
	return st
}

func events(source string) bucketing.Stream {
	return bucketing.Stream{Space: bucketing.Events, Source: source}
}

func dayStart(t time.Time) time.Time { return t.UTC().Truncate(24 * time.Hour) }

// batch is one writer's share of a second of a source's events, and the
// counts it places them under.
type batch struct {
	w     *writer
	items int
	cur   adapt.Counts
}

// batches splits the second at t of source's events, rate of them, evenly
// among the writers, the remainder spread so that the items add up, and
// gives each the counts its writer places them under.
func (st *adaptive) batches(source string, t time.Time, rate float64) []batch {
	total := int(math.Round(rate))
	n := len(st.writers)
	out := make([]batch, n)
	for i, w := range st.writers {
		sched := st.schedule(w, source, t)
		cur := adapt.Of(shardmap.InEffect(sched, dayStart(t), t, t))
		out[i] = batch{w: w, items: total*(i+1)/n - total*i/n, cur: cur}
		st.applied(source, t, cur)
	}
	return out
}

// schedule is the schedule w writes source's events of t's day under, as
// the ingest function gets it before a write: from the registry's cache,
// or read, and created at the day's first write.
func (st *adaptive) schedule(w *writer, source string, t time.Time) bucketing.Schedule {
	st.now = t
	k := [2]string{source, bucketing.Day(t)}
	sched, err := w.reg.Schedule(context.Background(), events(source), k[1])
	if err != nil {
		panic("heatsim: the in-memory shard record failed: " + err.Error())
	}
	if _, ok := st.scheds[k]; !ok {
		st.scheds[k] = sched
	}
	return sched
}

// applied notes when a raise's GSI count first applied to a write.
func (st *adaptive) applied(source string, t time.Time, cur adapt.Counts) {
	for i := range st.raises {
		x := &st.raises[i]
		if x.Source == source && x.raisedGSI && x.GSIFrom.IsZero() && cur.GSIShards >= x.GSI {
			x.GSIFrom = t
		}
	}
}

// observe feeds b's writer what its batch of source's events at t showed,
// items of wcu write units each on the table and on the GSI, a share of
// them throttled, and records the raise its policy then asks for.
func (st *adaptive) observe(source string, t time.Time, b batch, wcu, throttled float64) {
	n := int(math.Round(float64(b.items) * throttled))
	took := float64(b.items-n) * wcu
	b.w.policy.Observe(source, t, b.cur, adapt.Sample{Items: b.items, Stored: b.items - n, WCU: took, GSIWCU: took, Throttled: n})
	sched, ok := b.w.reg.Known(events(source), bucketing.Day(t))
	if !ok {
		return
	}
	cur, last := adapt.Of(shardmap.InEffect(sched, dayStart(t), t, t)), adapt.Of(sched.Last())
	own, measured := b.w.policy.Measure(source, t, cur)
	if !measured {
		return
	}
	if d, ok := st.forDemand(b.w, source, t, cur, last, own); ok {
		st.raise(b.w, source, t, d.To, d.Cover, d.Reason)
	}
}

// forDemand reports w's measure of source and decides on the writers'
// sum, as the ingest function does: from a writer's second report on, on
// the reports of the last two windows.
func (st *adaptive) forDemand(w *writer, source string, t time.Time, cur, last adapt.Counts, own adapt.Measured) (adapt.Decision, bool) {
	rs := st.reports[source]
	if rs == nil {
		rs = map[*writer]report{}
		st.reports[source] = rs
	}
	prev, again := rs[w]
	rs[w] = report{t, own.Measure}
	fresh := 2 * adapt.DefaultWindow
	if !again || t.Sub(prev.at) > fresh {
		return adapt.Decision{}, false
	}
	var sum shardmap.Measure
	n := 0
	for _, w := range st.writers { // in their order: a float sum's digits depend on it
		r, ok := rs[w]
		if ok && t.Sub(r.at) <= fresh {
			sum.Table += r.m.Table
			sum.GSI += r.m.GSI
			sum.Took.Table += r.m.Took.Table
			sum.Took.GSI += r.m.Took.GSI
			sum.Refused |= r.m.Refused
			n++
		}
	}
	return w.policy.ForDemand(source, t, cur, last, sum, n, own.Throttled)
}

// raise records, as w's registry records it, that source needs the counts
// to from t on; it says whether the record took the raise.
func (st *adaptive) raise(w *writer, source string, t time.Time, to, cover adapt.Counts, reason string) bool {
	st.now = t
	k := [2]string{source, bucketing.Day(t)}
	next, raised, err := w.reg.RaiseUnlessCovered(context.Background(), events(source), k[1],
		bucketing.Step{Shards: to.Shards, GSIShards: to.GSIShards}, bucketing.Step{Shards: cover.Shards, GSIShards: cover.GSIShards})
	if err != nil {
		panic("heatsim: the in-memory shard record failed: " + err.Error())
	}
	if !raised {
		st.unrecorded++
		return false
	}
	before := st.scheds[k]
	st.scheds[k] = next
	step := next.Last()
	st.raises = append(st.raises, Raise{Source: source, Recorded: t,
		From:   dayStart(t).Add(time.Duration(step.From) * time.Minute),
		Shards: step.Shards, GSI: step.GSIShards, InPlace: len(next) == len(before), Reason: reason,
		raisedGSI: len(before) == 0 || step.GSIShards > before.Last().GSIShards})
	return true
}

// maxGSIShards is the largest GSI count of source on any day of the run:
// the GSI shards a page of that day queries.
func (st *adaptive) maxGSIShards(source string) int {
	g := st.Floor.GSIShards
	for k, s := range st.scheds {
		if k[0] == source {
			g = max(g, s.MaxGSIShards())
		}
	}
	return g
}
