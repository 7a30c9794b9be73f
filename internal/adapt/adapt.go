// Package adapt decides when a source's write shard counts must rise, so
// that a source that turns hot is spread over more partition keys without an
// operator or a deploy, once, and no further than it needs.
//
// A Policy keeps, per source, a short window of what one writer (a Lambda
// container) saw: write units stored, items throttled, and how far the
// events' own times advanced. A source not throttled is raised (Decide)
// when the rate it is heading for needs more keys. A throttled source is
// measured (Measure: what this writer sees it ask, its keys' rate times how
// much faster events arrive than they are stored), the writers' measures
// are added up (shardmap.Demand), and each index whose keys the sum is over
// is raised to carry it (ForDemand). A raise is sized to carry the demand at
// bucketing.TargetUtilisation and is not asked for while the last step,
// pending or not, carries it at the ceiling. docs/adaptive.md has the
// reasoning and the measurements.
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
	// Rate and GSIRate are the write units a second this writer measured
	// for the source, base table and GSI, and Throttled the share of its
	// items throttled (Decide); Demand is the most the writers measured
	// the source asks of an index (ForDemand). They go in the log line of
	// the raise.
	Rate, GSIRate, Throttled, Demand float64
}

// Measure is, for a source that throttles, the write units a second this
// writer sees it ask of each index, for the caller to add up with what the
// other writers measured (shardmap.Demand): the rate its keys took times
// how much faster the traffic arrives than it is stored. ok is false when
// the source does not throttle, the window is not yet full, the source is
// not over its keys, or the source was measured less than half a window
// ago: a writer reports at most twice a window.
func (p *Policy) Measure(source string, now time.Time, cur Counts) (own shardmap.Rates, ok bool) {
	v, ok := p.view(source, now, cur)
	if !ok || v.secs < float64(p.slots()) {
		return own, false
	}
	if v.sum.Throttled < p.or(p.MinThrottled, DefaultMinThrottled) || float64(v.sum.Throttled) < ThrottleShare*float64(v.sum.Items) {
		return own, false
	}
	over := p.over(v.seen, v.sum)
	if over < MinOver {
		return own, false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	w := p.src[source]
	if w == nil || now.Sub(w.reported) < p.window()/2 {
		return own, false
	}
	w.reported = now
	rate := over * v.sum.WCU / v.secs // asked: stored, times the share unstored
	if arrived, ok := p.arrival(v.seen, p.slots()/2); ok {
		rate = arrived
	}
	gsi := rate
	if v.sum.WCU > 0 {
		gsi = rate * v.sum.GSIWCU / v.sum.WCU
	}
	return shardmap.Rates{Table: rate, GSI: gsi}, true
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
// now, the sum of its writers' Measure: each index whose keys the demand
// is over rises to carry it at the target utilisation, unless the last
// step carries it at the ceiling. When the sum rose clearly (TrendRise)
// over each of the last two windows it was read in (a ramp, not a step),
// the rise is continued to when a raise decided now would start: a sum of
// every writer's measure is steady enough to extrapolate, where one
// writer's throttled view is not. A step still pending for an index must
// be outgrown twice over: the demand was measured under the counts it
// replaces, and a raise that covers it is on its way. writers is how many
// writers' measures were summed, for the log.
func (p *Policy) ForDemand(source string, now time.Time, cur, last Counts, demand shardmap.Rates, writers int) (Decision, bool) {
	reason := "throttled"
	if ahead, ok := p.rising(source, now, cur, demand); ok {
		demand, reason = ahead, "throttled, rising"
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

// view is a window read for a decision: its halves, its sum, and how long
// it spans.
type view struct {
	older, newer, sum Sample
	// slots with samples, oldest first, for the event-time progress
	seen []slot
	secs float64
}

// Decide says whether source needs more shards than last, the counts of
// the source's last scheduled step (which may not have taken effect yet),
// given what was observed while cur, the counts in effect now, held.
func (p *Policy) Decide(source string, now time.Time, cur, last Counts) (Decision, bool) {
	v, ok := p.view(source, now, cur)
	if !ok {
		return Decision{}, false
	}
	d := Decision{Rate: v.sum.WCU / v.secs, GSIRate: v.sum.GSIWCU / v.secs,
		Throttled: float64(v.sum.Throttled) / float64(v.sum.Items)}
	// A throttled source is for Measure and ForDemand: what one writer
	// sees of it is its share, and the writers' sum decides. The rate rule
	// is for a source not yet throttled, with no raise pending.
	if cur != last || v.sum.Throttled >= p.or(p.MinThrottled, DefaultMinThrottled) && d.Throttled >= ThrottleShare {
		return Decision{}, false
	}
	over := p.over(v.seen, v.sum)
	need, cover := p.rateNeed(v, d, over)
	reason := "rate"
	// An index the last step covers is left as it is; the others rise to
	// what they need.
	d.To, d.Cover = last, cover
	if cover.Shards > last.Shards {
		d.To.Shards = p.clamp(max(need.Shards, last.Shards+1))
	}
	if cover.GSIShards > last.GSIShards {
		d.To.GSIShards = p.clamp(max(need.GSIShards, last.GSIShards+1))
	}
	d.To = Counts{max(d.To.Shards, last.Shards), max(d.To.GSIShards, last.GSIShards)}
	if d.To == last {
		return Decision{}, false
	}
	d.Reason = fmt.Sprintf("%s: %.0f WCU/s base, %.0f WCU/s GSI, %.1f%% throttled over %.0fs under %d/%d shards",
		reason, d.Rate, d.GSIRate, 100*d.Throttled, v.secs, cur.Shards, cur.GSIShards)
	return d, true
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
	mid := oldest + int64(len(w.slots))/2
	for _, sl := range w.slots {
		switch {
		case sl.sec >= mid && sl.sec <= now.Unix():
			v.newer.add(sl.Sample)
		case sl.sec >= oldest && sl.sec < mid:
			v.older.add(sl.Sample)
		default:
			continue
		}
		v.seen = append(v.seen, sl)
	}
	v.sum = v.older
	v.sum.add(v.newer)
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

// rateNeed is what the source's demand needs, before any throttling: the
// write units a second that arrive (for items delivered in arrival order,
// what the writer got through per second of event time, not the rate its
// keys took while a backlog drained), or, for a clear rise, the rate it is
// heading for when a raise decided now would start (shardmap.Lead). Cover
// is the keys that carry that at the ceiling: a source below them needs no
// raise, however close it runs. Need is the keys that carry it at the
// target utilisation, what a raise asks for.
func (p *Policy) rateNeed(v view, d Decision, over float64) (need, cover Counts) {
	half := p.slots() / 2
	if !v.sum.Latest.IsZero() && (over > MinOver || over < 1/MinOver) {
		// A writer behind, or draining a backlog, sees what its keys
		// take, not the source's rate: for Measure, or for nobody.
		return Counts{}, Counts{}
	}
	demand := over * d.Rate
	if a, ok := p.arrival(v.seen, half); ok {
		demand = a
	} else if !v.sum.Latest.IsZero() {
		// Items delivered in order whose arrival does not show yet: what
		// their keys take may be a backlog draining, not the demand.
		return Counts{}, Counts{}
	}
	r0, r1 := p.halves(v)
	demand = max(demand, p.ahead(v.secs, r0, r1)*r1)
	dn, dg := demand, demand
	if v.sum.WCU > 0 {
		dg = demand * v.sum.GSIWCU / v.sum.WCU
	}
	return Counts{p.need(dn), p.need(dg)}, Counts{p.atCeiling(dn), p.atCeiling(dg)}
}

// halves is the source's rate in each half of the window: what arrived,
// for items delivered in arrival order (0, 0 when a half does not show
// it: a rise is not read from two different measures), else what its
// keys took.
func (p *Policy) halves(v view) (older, newer float64) {
	half := p.slots() / 2
	if half < 1 || len(v.seen) == 0 {
		return 0, 0
	}
	mid := v.seen[len(v.seen)-1].sec - int64(half) + 1
	var o, n []slot
	for _, sl := range v.seen {
		if sl.sec < mid {
			o = append(o, sl)
		} else {
			n = append(n, sl)
		}
	}
	if !v.sum.Latest.IsZero() {
		a0, ok0 := p.arrival(o, max(1, half/2))
		a1, ok1 := p.arrival(n, max(1, half/2))
		if !ok0 || !ok1 {
			return 0, 0
		}
		return a0, a1
	}
	return max(v.older.WCU, v.older.GSIWCU) / float64(half), max(v.newer.WCU, v.newer.GSIWCU) / float64(half)
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

// ahead is the factor by which the rate is heading to grow by the time a
// raise decided now would start: the growth from r0, the older half of the
// window's rate, to r1, the newer's, extrapolated linearly over the
// horizon, between 1 and MaxGrowth. Only a full window counts, only a
// source past a quarter of a key's ceiling, and only a clear rise (half as
// much again from one half of the window to the other): extrapolating
// eight minutes ahead turns small wobbles into large counts.
func (p *Policy) ahead(secs, r0, r1 float64) float64 {
	if secs < float64(p.slots()) || p.slots()/2 < 1 {
		return 1
	}
	if r0 <= 0 || r1 < 1.5*r0 || r1 < p.keyWCU()/4 {
		return 1
	}
	return p.extrapolate(r0, r1) / r1
}

// extrapolate continues the change from v0, over the window's older half,
// to v1, over its newer half, linearly to the horizon: at most MaxGrowth
// times v1.
func (p *Policy) extrapolate(v0, v1 float64) float64 {
	half := float64(p.slots() / 2)
	horizon := p.Horizon
	if horizon <= 0 {
		horizon = DefaultHorizon
	}
	return min(MaxGrowth*v1, v1+(v1-v0)/half*horizon.Seconds())
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
