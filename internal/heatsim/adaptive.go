package heatsim

import (
	"fmt"
	"math"
	"time"

	"github.com/shardline/shardline/internal/adapt"
	"github.com/shardline/shardline/internal/ingest"
	"github.com/shardline/shardline/internal/shardmap"
	"github.com/shardline/shardline/pkg/bucketing"
)

// Policy is what an adaptive design's writers ask for more shards:
// *adapt.Policy, the ingest function's, unless a test prototypes another.
type Policy interface {
	Observe(source string, now time.Time, cur adapt.Counts, s adapt.Sample)
	Decide(source string, now time.Time, cur, last adapt.Counts) (adapt.Decision, bool)
}

// Adaptive is shardline with adaptive write sharding (issue 14): every
// source starts each UTC day at Floor, and every simulated second each of
// Writers writer containers feeds its Policy what it saw of the source (its
// share of the items and their write units, and the items throttled on
// their first attempt) and asks it whether to raise. A raise is recorded as
// the shard record records it: a step from now + shardmap.Lead, rounded up
// to the next minute, on the same UTC day, later than the last step.
type Adaptive struct {
	// Floor is the configured counts (SHARDS, GSI_SHARDS or their
	// overrides); zero fields take ingest's defaults.
	Floor adapt.Counts
	// Writers is the number of writer containers; each sees 1/Writers of
	// every source's items and the same share of them throttled. 0 is 1.
	Writers int
	// NewPolicy makes one writer's policy; nil is a new adapt.Policy with
	// its defaults.
	NewPolicy func() Policy
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

// Raise is a step an adaptive design recorded.
type Raise struct {
	Source   string    `json:"source"`
	Recorded time.Time `json:"recorded"`  // when the writer asked
	From     time.Time `json:"effective"` // when the step takes effect
	Shards   int       `json:"shards"`
	GSI      int       `json:"gsi_shards"`
	Reason   string    `json:"reason"`
}

// StepStart is when a step recorded at now takes effect: now +
// shardmap.Lead, truncated to the minute, plus a minute, as the shard
// record's writers schedule it (a test pins the two together).
func StepStart(now time.Time) time.Time {
	return now.Add(shardmap.Lead).Truncate(time.Minute).Add(time.Minute).UTC()
}

// adaptive is an adaptive design's state during one run.
type adaptive struct {
	Adaptive
	writers    []Policy
	scheds     map[[2]string]bucketing.Schedule // (source, day) -> steps
	raises     []Raise
	unrecorded int
}

func newAdaptive(a Adaptive) *adaptive {
	a.Floor = a.floor()
	n := max(1, a.Writers)
	st := &adaptive{Adaptive: a, scheds: map[[2]string]bucketing.Schedule{}}
	for range n {
		if a.NewPolicy != nil {
			st.writers = append(st.writers, a.NewPolicy())
		} else {
			st.writers = append(st.writers, &adapt.Policy{})
		}
	}
	return st
}

// sched is the schedule of source on t's day, created at the floor by the
// day's first write.
func (st *adaptive) sched(source string, t time.Time) bucketing.Schedule {
	k := [2]string{source, bucketing.Day(t)}
	s, ok := st.scheds[k]
	if !ok {
		s = bucketing.Schedule{{From: 0, Shards: st.Floor.Shards, GSIShards: st.Floor.GSIShards}}
		st.scheds[k] = s
	}
	return s
}

// counts is what source's writers use at t.
func (st *adaptive) counts(source string, t time.Time) adapt.Counts {
	return adapt.Of(st.sched(source, t).At(t))
}

// observe gives each writer its share of a second of source's traffic at t
// (events items of wcu write units each, on the table and on the GSI, share
// of them throttled) and records the raises they ask for.
func (st *adaptive) observe(source string, t time.Time, events, wcu, share float64) {
	day := bucketing.Day(t)
	n := len(st.writers)
	total := int(math.Round(events))
	for i, p := range st.writers {
		// Writer i's items: an even split, the remainder spread so that
		// the writers' items add up to the source's.
		items := total*(i+1)/n - total*i/n
		sched := st.sched(source, t)
		cur := adapt.Of(sched.At(t))
		p.Observe(source, t, cur, adapt.Sample{
			Items: items, WCU: float64(items) * wcu, GSIWCU: float64(items) * wcu,
			Throttled: int(math.Round(float64(items) * share)),
		})
		d, ok := p.Decide(source, t, cur, adapt.Of(sched.Last()))
		if !ok {
			continue
		}
		from := StepStart(t)
		last := sched.Last()
		m := from.Hour()*60 + from.Minute()
		if bucketing.Day(from) != day || m <= last.From {
			// Too late for the day, or a step already starts that minute:
			// the record takes nothing, and the writer asks again.
			st.unrecorded++
			continue
		}
		step := bucketing.Step{From: m, Shards: max(d.To.Shards, last.Shards), GSIShards: max(d.To.GSIShards, last.GSIShards)}
		st.scheds[[2]string{source, day}] = append(sched, step)
		st.raises = append(st.raises, Raise{Source: source, Recorded: t, From: from,
			Shards: step.Shards, GSI: step.GSIShards, Reason: d.Reason})
	}
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
