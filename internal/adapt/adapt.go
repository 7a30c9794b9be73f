// Package adapt decides when a source's write shard counts must rise, so
// that a source that turns hot is spread over more partition keys without an
// operator or a deploy, once, and no further than it needs.
//
// A Policy keeps, per source, a short window of what one writer (a Lambda
// container) saw: write units stored, items throttled, and how far the
// events' own times advanced. A source that throttles, or that runs at
// ReportShare of its keys or more, is measured (Measure: what this writer
// sees it ask), the writers' measures are added up (shardmap.Demand), since
// each writer sees only its share of a source, and each index whose keys
// the sum is over, now or, on a clear rise, by the time a raise decided now
// would start, is raised to carry it (ForDemand). A raise is sized to carry
// the demand at bucketing.TargetUtilisation and is not asked for while the
// last step, pending or not, carries it at the ceiling. docs/adaptive.md
// has the reasoning and the measurements.
//
// A Policy only decides. The caller records the raise in the shard record
// (shardmap.Registry.RaiseUnlessCovered), where concurrent writers agree on
// one step, and logs and counts it.
package adapt

import (
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/shardline/shardline/internal/shardmap"
	"github.com/shardline/shardline/pkg/bucketing"
)

// Defaults of Policy's fields.
const (
	// DefaultMax is the most shards a raise asks for, base table or GSI:
	// enough for a source of about 90,000 one-kilobyte events a second.
	DefaultMax = 128
	// DefaultWindow is how much recent traffic a decision weighs.
	DefaultWindow = 10 * time.Second
	// ThrottleShare is the share of a source's items throttled in the
	// window from which the policy treats the source as over its keys.
	ThrottleShare = 0.01
	// DefaultMinThrottled is the fewest throttled items that count as a
	// signal: one unprocessed item is a blip, not a hot key.
	DefaultMinThrottled = 5
	// DefaultMinItems is the fewest items in the window the policy decides
	// on.
	DefaultMinItems = 50
	// DefaultHorizon is how far ahead a raise plans: the lead after which
	// a recorded raise starts, and the minute it is rounded up by.
	DefaultHorizon = shardmap.Lead + time.Minute
	// MaxGrowth bounds the extrapolation: a raise plans for at most this
	// many times the rate measured now.
	MaxGrowth = 64
	// MaxOver bounds how many times what it stores a writer takes a
	// source to ask: a writer that stored almost nothing measures a ratio
	// it cannot trust.
	MaxOver = 16
	// TrendRise is the rise of a source's summed demand over a window
	// that the policy extrapolates (see ForDemand).
	TrendRise = 1.1
	// MinOver is how much faster than it is stored a throttled source
	// must arrive to be measured: below it the writer keeps up, and the
	// throttling is a burst its keys absorb.
	MinOver = 1.1
	// ReportShare is the share of its keys' ceiling from which a writer
	// measures a source that does not throttle: a source spread over up to
	// eight writers is measured by each from half its ceiling. A report
	// is a write unit, at most two a window per writer, so it costs at
	// most 0.3% of the writes it measures (two in 10 s against 62.5 WCU/s
	// or more); a source far below its keys is not worth one.
	ReportShare = 1.0 / 16
)

// Counts are a source's shard counts: base table and GSI.
type Counts struct {
	Shards, GSIShards int
}

// Of is the counts of a schedule step.
func Of(s bucketing.Step) Counts { return Counts{s.Shards, s.GSIShards} }

// Sample is what one write of a source's items showed.
type Sample struct {
	Items int // items written or attempted
	// Stored is the items stored. Items - Stored failed for now, most
	// often held back by their key's pace until the deadline.
	Stored int
	// WCU and GSIWCU are the base-table and GSI write units of the items
	// stored: the rate the keys took (an item delivered again and stored
	// again is taken again).
	WCU, GSIWCU float64
	Throttled   int // items DynamoDB throttled at least once
	// Fresh is the write units of the items stored past where the writer
	// had got through the source's events (Policy.Latest) before this
	// write, for items delivered in arrival order: the traffic it got
	// through, each event once, however often a delivery is repeated.
	Fresh float64
	// Latest is the newest event time among the items stored, for items
	// delivered in the order they arrived (a Kinesis shard): how far the
	// writer has got through the source's events. Zero for items that
	// arrive as they are sent (an API request).
	Latest time.Time
}

// Policy keeps a short window of samples per source. The zero value uses
// the defaults; it is safe for concurrent use.
type Policy struct {
	Max    int           // most shards a raise asks for; default DefaultMax
	Window time.Duration // traffic a decision weighs; default DefaultWindow
	// KeyWCU is the write units a second one partition key value takes:
	// default bucketing.PartitionWCU, DynamoDB's. A test that scales its
	// traffic down scales this, MinItems and MinThrottled with it.
	KeyWCU       float64
	MinItems     int           // default DefaultMinItems
	MinThrottled int           // default DefaultMinThrottled
	Horizon      time.Duration // default DefaultHorizon

	mu   sync.Mutex
	src  map[string]*window
	sums map[string][2]summed // the last two sums ForDemand kept, a window or more apart, per source
}

// summed is a source's demand as the writers' sum gave it at a time,
// under counts.
type summed struct {
	at     time.Time
	under  Counts
	demand shardmap.Rates
}

// window holds a source's samples in one-second slots, taken while the
// counts in effect were under.
type window struct {
	under    Counts
	start    time.Time // first sample under these counts
	slots    []slot
	reported time.Time // when Measure last answered for the source
}

type slot struct {
	sec int64
	Sample
}

// Observe records a sample of source, written at now while the counts in
// effect were cur. Samples taken under other counts are forgotten: once a
// raise takes effect, throttling seen before it says nothing.
func (p *Policy) Observe(source string, now time.Time, cur Counts, s Sample) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.src == nil {
		p.src = map[string]*window{}
	}
	w := p.src[source]
	n := p.slots()
	if w == nil || w.under != cur {
		w = &window{under: cur, start: now, slots: make([]slot, n)}
		p.src[source] = w
	}
	sec := now.Unix()
	sl := &w.slots[int(sec%int64(n)+int64(n))%n]
	if sl.sec != sec {
		*sl = slot{sec: sec}
	}
	sl.add(s)
}

func (s *Sample) add(o Sample) {
	s.Items += o.Items
	s.Stored += o.Stored
	s.WCU += o.WCU
	s.GSIWCU += o.GSIWCU
	s.Throttled += o.Throttled
	s.Fresh += o.Fresh
	if o.Latest.After(s.Latest) {
		s.Latest = o.Latest
	}
}

// Forget drops what the policy holds of sources it has not heard from in a
// window, so that a long-lived container's memory stays bounded by the
// sources it currently writes.
func (p *Policy) Forget(now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := int64(p.slots())
	for name, w := range p.src {
		newest := int64(math.MinInt64)
		for _, sl := range w.slots {
			newest = max(newest, sl.sec)
		}
		if now.Unix()-newest >= n {
			delete(p.src, name)
		}
	}
}

// Decision is a raise the policy asks for.
type Decision struct {
	// To is the counts to raise to; Cover the counts that carry the
	// demand at the ceiling. A step that already has Cover makes the
	// raise needless: another writer raised first, or a pending raise
	// covers what this writer measured.
	To, Cover Counts
	Reason    string
	// Demand is the most the writers measured the source to ask of an
	// index, extrapolated when it rises: what the raise is sized for.
	Demand float64
}

// Measured is what one writer measured a source to ask of each index.
type Measured struct {
	shardmap.Rates
	// Throttled says the writer could not keep up: DynamoDB throttled the
	// source, or the writer fell behind its events (paced on throttled
	// keys). Else it kept up.
	Throttled bool
}

// Measure is the write units a second this writer sees source ask of each
// index, for the caller to add up with what the other writers measured
// (shardmap.Demand). For items delivered in arrival order it is the rate
// they arrived at, by their own times, whether the writer keeps up, falls
// behind or drains a backlog; for items sent as they arrive (API
// requests), which have no backlog to read, it is the rate their keys took
// times the share left unstored. A writer that keeps up with a source
// under ReportShare of its keys measures nothing: such a source is not
// worth a report. ok is false then, when the window is not yet full or
// does not show the arrival yet, or when the source was measured less than
// half a window ago: a writer reports at most twice a window.
func (p *Policy) Measure(source string, now time.Time, cur Counts) (m Measured, ok bool) {
	v, ok := p.view(source, now, cur)
	if !ok || v.secs < float64(p.slots()) {
		return m, false
	}
	over := p.over(v.seen, v.sum)
	m.Throttled = over >= MinOver || v.sum.Throttled >= p.or(p.MinThrottled, DefaultMinThrottled) && float64(v.sum.Throttled) >= ThrottleShare*float64(v.sum.Items)
	arrived, inOrder := p.arrival(v.seen, p.slots()/2)
	switch {
	case inOrder:
		m.Table = arrived
	case v.sum.Latest.IsZero() || m.Throttled:
		m.Table = over * v.sum.WCU / v.secs // asked: stored, times the share unstored
	default:
		return m, false
	}
	m.GSI = m.Table
	if v.sum.WCU > 0 {
		m.GSI = m.Table * v.sum.GSIWCU / v.sum.WCU
	}
	if !m.Throttled && m.Table < ReportShare*float64(cur.Shards)*p.keyWCU() && m.GSI < ReportShare*float64(cur.GSIShards)*p.keyWCU() {
		return m, false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	w := p.src[source]
	if w == nil || now.Sub(w.reported) < p.window()/2 {
		return m, false
	}
	w.reported = now
	return m, true
}

// arrival is, for items delivered in arrival order, the write units a
// second of event time that arrived: what the writer got through past the
// first slot with a Latest (Fresh), over the event time it got through.
// ok is false without such items over span seconds.
func (p *Policy) arrival(seen []slot, span int) (rate float64, ok bool) {
	first := -1
	var fresh float64
	var got time.Time // how far it got: a slot that stored only old events moves nothing
	for i, sl := range seen {
		if sl.Latest.IsZero() {
			continue
		}
		if first < 0 {
			first, got = i, sl.Latest
			continue
		}
		fresh += sl.Fresh
		if sl.sec-seen[first].sec >= int64(span) {
			ok = true
		}
		if sl.Latest.After(got) {
			got = sl.Latest
		}
	}
	if first < 0 {
		return 0, false
	}
	secs := got.Sub(seen[first].Latest).Seconds()
	if secs <= 0 {
		return 0, false
	}
	return fresh / secs, ok
}

// Latest is how far this writer got through source's events delivered in
// arrival order: the newest Latest of its window, or zero.
func (p *Policy) Latest(source string) time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	var t time.Time
	if w := p.src[source]; w != nil {
		for _, sl := range w.slots {
			if sl.Latest.After(t) {
				t = sl.Latest
			}
		}
	}
	return t
}

// ForDemand is the raise source needs that asks demand of its indexes at
// now, the sum of its writers' Measure (throttled: this writer measured it
// throttled, for the reason logged): each index whose keys the demand
// is over rises to carry it at the target utilisation, unless the last
// step carries it at the ceiling. When the sum rose clearly (TrendRise)
// over each of the last two windows it was read in (a ramp, not a step),
// the rise is continued to when a raise decided now would start: a sum of
// every writer's measure is steady enough to extrapolate, where one
// writer's throttled view is not. A step still pending for an index must
// be outgrown twice over: the demand was measured under the counts it
// replaces, and a raise that covers it is on its way. writers is how many
// writers' measures were summed, for the log.
func (p *Policy) ForDemand(source string, now time.Time, cur, last Counts, demand shardmap.Rates, writers int, throttled bool) (Decision, bool) {
	reason := "rate"
	if throttled {
		reason = "throttled"
	}
	if ahead, ok := p.rising(source, now, cur, demand); ok {
		demand, reason = ahead, reason+", rising"
	}
	d := Decision{Demand: max(demand.Table, demand.GSI)}
	d.To = last
	raise := func(keys, pending int, rate float64) (to, cover int) {
		if rate <= float64(keys)*p.keyWCU() {
			return 0, 0
		}
		cover = p.atCeiling(rate)
		if pending > keys && cover <= 2*pending {
			return 0, 0
		}
		return p.clamp(p.need(rate)), cover
	}
	if to, cover := raise(cur.Shards, last.Shards, demand.Table); cover > last.Shards {
		d.To.Shards, d.Cover.Shards = max(to, last.Shards+1), cover
	}
	if to, cover := raise(cur.GSIShards, last.GSIShards, demand.GSI); cover > last.GSIShards {
		d.To.GSIShards, d.Cover.GSIShards = max(to, last.GSIShards+1), cover
	}
	d.To = Counts{min(max(d.To.Shards, last.Shards), max(p.max(), last.Shards)), min(max(d.To.GSIShards, last.GSIShards), max(p.max(), last.GSIShards))}
	if d.To == last {
		return Decision{}, false
	}
	d.Reason = fmt.Sprintf("%s: %d writers measure %.0f WCU/s base, %.0f WCU/s GSI under %d/%d shards",
		reason, writers, demand.Table, demand.GSI, cur.Shards, cur.GSIShards)
	return d, true
}

// rising remembers demand as source's at now, a window or more after the
// sum it remembers, and when the last three sums rose by TrendRise or more
// each (a ramp, not a step), returns demand continued linearly to the
// horizon, at most MaxGrowth times.
func (p *Policy) rising(source string, now time.Time, cur Counts, demand shardmap.Rates) (shardmap.Rates, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.sums == nil || len(p.sums) > 1<<16 {
		p.sums = map[string][2]summed{}
	}
	prev, ok := p.sums[source]
	dt := now.Sub(prev[1].at)
	if ok && dt < p.window() && prev[1].under == cur {
		return demand, false // too soon to tell a rise: keep the older sums
	}
	p.sums[source] = [2]summed{prev[1], {now, cur, demand}}
	// Sums read under other counts measured other keys: a rise across a
	// raise is the backlog the raise let through.
	if !ok || prev[0].at.IsZero() || now.Sub(prev[0].at) > 4*p.window() || prev[0].under != cur || prev[1].under != cur {
		return demand, false
	}
	horizon := p.Horizon
	if horizon <= 0 {
		horizon = DefaultHorizon
	}
	ahead := func(d0, d1, d2 float64) float64 {
		if d0 <= 0 || d1 < TrendRise*d0 || d2 < TrendRise*d1 {
			return d2
		}
		return min(MaxGrowth*d2, d2+(d2-d1)/dt.Seconds()*horizon.Seconds())
	}
	out := shardmap.Rates{Table: ahead(prev[0].demand.Table, prev[1].demand.Table, demand.Table),
		GSI: ahead(prev[0].demand.GSI, prev[1].demand.GSI, demand.GSI)}
	return out, out != demand
}

// view is a window read for a decision: its sum, and how long it spans.
type view struct {
	sum Sample
	// slots with samples, oldest first, for the event-time progress
	seen []slot
	secs float64
}

// view reads source's window under cur as of now; ok is false when it
// holds too little to decide on.
func (p *Policy) view(source string, now time.Time, cur Counts) (v view, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	w := p.src[source]
	if w == nil || w.under != cur {
		return v, false
	}
	oldest := now.Unix() - int64(len(w.slots)) + 1
	for _, sl := range w.slots {
		if sl.sec < oldest || sl.sec > now.Unix() {
			continue
		}
		v.sum.add(sl.Sample)
		v.seen = append(v.seen, sl)
	}
	if v.sum.Items < p.or(p.MinItems, DefaultMinItems) {
		return v, false
	}
	for i := 1; i < len(v.seen); i++ {
		for j := i; j > 0 && v.seen[j].sec < v.seen[j-1].sec; j-- {
			v.seen[j], v.seen[j-1] = v.seen[j-1], v.seen[j]
		}
	}
	// The window's length, or the time since the first sample under these
	// counts if that is shorter, and at least a second.
	v.secs = max(1, min(p.window().Seconds(), now.Sub(w.start).Seconds()+1))
	return v, true
}

// over is how many times faster than it is stored a source's traffic
// arrives, from the slots of a window (oldest first) and their sum. For
// items delivered in arrival order it is the wall time the window spans
// over the event time the writer got through in it: a writer that stores
// a second of events every three seconds is asked three times what its
// keys take. For items sent as they arrive, it is the items asked for over
// those stored. At least 1/MaxOver, at most MaxOver.
func (p *Policy) over(seen []slot, sum Sample) float64 {
	var first, last *slot
	for i := range seen {
		if seen[i].Latest.IsZero() {
			continue
		}
		if first == nil {
			first = &seen[i]
		}
		last = &seen[i]
	}
	bound := func(x float64) float64 { return min(MaxOver, max(1.0/MaxOver, x)) }
	if first != nil && last.sec-first.sec >= int64(p.slots()/2) {
		got := last.Latest.Sub(first.Latest).Seconds()
		if got <= 0 {
			return MaxOver
		}
		return bound(float64(last.sec-first.sec) / got)
	}
	if sum.Stored == 0 {
		return MaxOver
	}
	return bound(float64(sum.Items) / float64(sum.Stored))
}

// need is the keys that take rate write units a second at the target
// utilisation, as bucketing.ShardsFor plans them.
func (p *Policy) need(rate float64) int {
	n := math.Ceil(rate / (p.keyWCU() * bucketing.TargetUtilisation))
	return int(max(1, min(n, bucketing.MaxShards)))
}

// atCeiling is the keys that take rate write units a second at their
// ceiling.
func (p *Policy) atCeiling(rate float64) int {
	n := math.Ceil(rate / p.keyWCU())
	return int(max(1, min(n, bucketing.MaxShards)))
}

// clamp bounds a count by Max.
func (p *Policy) clamp(n int) int { return min(n, p.max()) }

func (p *Policy) keyWCU() float64 {
	if p.KeyWCU > 0 {
		return p.KeyWCU
	}
	return bucketing.PartitionWCU
}

func (p *Policy) or(v, d int) int {
	if v > 0 {
		return v
	}
	return d
}

func (p *Policy) max() int {
	if p.Max > 0 {
		return min(p.Max, bucketing.MaxShards)
	}
	return DefaultMax
}

// WindowOrDefault is the traffic a decision weighs: Window, or its
// default.
func (p *Policy) WindowOrDefault() time.Duration { return p.window() }

func (p *Policy) window() time.Duration {
	if p.Window > 0 {
		return p.Window
	}
	return DefaultWindow
}

func (p *Policy) slots() int { return max(1, int(p.window()/time.Second)) }
