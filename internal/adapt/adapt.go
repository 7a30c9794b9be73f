// Package adapt decides when a source's write shard counts must rise, so
// that a source that turns hot is spread over more partition keys without an
// operator or a deploy.
//
// A Policy watches, per source, what one writer (a Lambda container) sends:
// the write units of the source's items and how many of them DynamoDB
// throttled (UnprocessedItems, or a throttled request). From a short window
// of that it asks for more shards in two cases:
//
//   - before any throttling, when the source's own measured rate would use
//     more than TargetUtilisation of its partition keys at the rate it is
//     heading for: a raise takes shardmap.Lead to take effect, and a rising
//     source keeps rising meanwhile. The policy plans for the larger of
//     twice the current rate and the rate extrapolated from the window's
//     growth to when the raise would start (Horizon), at most MaxGrowth
//     times the current rate;
//   - when throttling is concentrated on the source (at least ThrottleShare
//     of its items in the window, and at least MinThrottled of them): its
//     demand is above what its keys take, by an unknown amount, since a
//     throttled writer only sees the rate that got through. Then the
//     index whose keys carry the most per key gets 4 to 16 times its
//     current count, more the larger the throttled share, and both
//     indexes get at least what the demand the throttling implies needs
//     (the hot index's keys at their ceiling, over the share let through,
//     planned at twice): every writer sees the same share, however few of
//     the source's items it writes. When that demand rises clearly from
//     one half of the window to the other (TrendRise), the rise is
//     continued to when the raise would start, as the rate's is.
//
// Every raise at least doubles the last scheduled count and none goes past
// Max, so a day sees at most log2(Max/floor) raises per index. Counts are
// never lowered: the registry records raises for the rest of the day.
//
// A Policy only decides. The caller records the raise in the shard record
// (shardmap.Registry.Raise), where concurrent writers agree on one
// schedule, and logs and counts it.
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
	// MinStep and MaxStep bound the factor a throttled index's count
	// grows by: 2/(1-f) for a throttled share f, so that a source far over
	// its keys needs fewer raises (each takes shardmap.Lead to take
	// effect) than one just over them.
	MinStep = 4
	MaxStep = 16
	// TrendRise is the rise of the implied demand from one half of the
	// window to the other that the policy extrapolates (see trend).
	TrendRise = 1.25
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
	// WCU and GSIWCU are the base-table and GSI write units of the items
	// written without being throttled: the rate the keys took. Throttled
	// items are left out, as they may be retried and redelivered many
	// times over, which would inflate the rate.
	WCU, GSIWCU float64
	Throttled   int // items DynamoDB throttled at least once
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

	mu  sync.Mutex
	src map[string]*window
}

// window holds a source's samples in one-second slots, taken while the
// counts in effect were under.
type window struct {
	under Counts
	start time.Time // first sample under these counts
	slots []slot
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
	s.WCU += o.WCU
	s.GSIWCU += o.GSIWCU
	s.Throttled += o.Throttled
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
	To     Counts
	Reason string
	// Rate and GSIRate are the write units a second this writer measured
	// for the source, base table and GSI; Throttled is the share of its
	// items throttled. They go in the log line of the raise.
	Rate, GSIRate, Throttled float64
}

// Decide says whether source needs more shards than last, the counts of
// the source's last scheduled step (which may not have taken effect yet),
// given what was observed while cur, the counts in effect now, held.
func (p *Policy) Decide(source string, now time.Time, cur, last Counts) (Decision, bool) {
	p.mu.Lock()
	w := p.src[source]
	var older, newer Sample // the window's halves
	if w != nil && w.under == cur {
		oldest := now.Unix() - int64(len(w.slots)) + 1
		mid := oldest + int64(len(w.slots))/2
		for _, sl := range w.slots {
			switch {
			case sl.sec >= mid && sl.sec <= now.Unix():
				newer.add(sl.Sample)
			case sl.sec >= oldest && sl.sec < mid:
				older.add(sl.Sample)
			}
		}
	}
	sum := older
	sum.add(newer)
	var start time.Time
	if w != nil {
		start = w.start
	}
	p.mu.Unlock()
	if sum.Items < p.or(p.MinItems, DefaultMinItems) {
		return Decision{}, false
	}
	// The window's length, or the time since the first sample under these
	// counts if that is shorter, and at least a second.
	secs := min(p.window().Seconds(), now.Sub(start).Seconds()+1)
	secs = max(secs, 1)
	d := Decision{Rate: sum.WCU / secs, GSIRate: sum.GSIWCU / secs, Throttled: float64(sum.Throttled) / float64(sum.Items)}
	// What the measured rate needs, planned at twice the rate: a raise
	// takes effect only after shardmap.Lead.
	ahead := p.ahead(secs, older, newer)
	half := float64(p.slots() / 2)
	needN := p.need(max(2*d.Rate, ahead*newer.WCU/half))
	needG := p.need(max(2*d.GSIRate, ahead*newer.GSIWCU/half))
	reason := "rate"
	if sum.Throttled >= p.or(p.MinThrottled, DefaultMinThrottled) && d.Throttled >= ThrottleShare {
		reason = "throttled"
		loadN := d.Rate / float64(cur.Shards)
		loadG := d.GSIRate / float64(cur.GSIShards)
		hot := max(loadN, loadG)
		step := int(min(MaxStep, max(MinStep, 2/max(1-d.Throttled, 1.0/MaxStep))))
		if loadN >= hot/2 {
			needN = max(needN, step*cur.Shards)
		}
		if loadG >= hot/2 {
			needG = max(needG, step*cur.GSIShards)
		}
		// What the source asks of its keys, whichever writer measures
		// it: the hot index's keys let through their ceiling and refuse
		// the throttled share. Every item is written to both indexes, so
		// both must carry it, planned at twice, as the rate is.
		hotKeys := cur.Shards
		if loadG > loadN {
			hotKeys = cur.GSIShards
		}
		capacity := float64(hotKeys) * p.keyWCU()
		demand := implied(capacity, d.Throttled)
		trend := p.trend(secs, capacity, older, newer)
		if trend > 2*demand {
			reason = "throttled, rising"
		}
		implied := p.need(max(2*demand, trend))
		needN, needG = max(needN, implied), max(needG, implied)
	}
	d.To = Counts{p.raise(last.Shards, needN), p.raise(last.GSIShards, needG)}
	if d.To == last {
		return Decision{}, false
	}
	d.Reason = fmt.Sprintf("%s: %.0f WCU/s base, %.0f WCU/s GSI, %.1f%% throttled over %.0fs under %d/%d shards",
		reason, d.Rate, d.GSIRate, 100*d.Throttled, secs, cur.Shards, cur.GSIShards)
	return d, true
}

// raise is the count to schedule in place of last when need is wanted: at
// least twice last, at most Max, and never below last.
func (p *Policy) raise(last, need int) int {
	if need <= last {
		return last
	}
	return max(last, min(max(need, 2*last), p.max()))
}

// ahead is the factor by which the rate is heading to grow by the time a
// raise decided now would start: the growth from the older half of the
// window to the newer, extrapolated linearly over the horizon, between 1
// and MaxGrowth. Only a full window counts, only a source past a quarter
// of a key's ceiling, and only a clear rise (half as much again from one
// half of the window to the other): extrapolating eight minutes ahead
// turns small wobbles into large counts.
func (p *Policy) ahead(secs float64, older, newer Sample) float64 {
	half := float64(p.slots() / 2)
	if secs < float64(p.slots()) || half < 1 {
		return 1
	}
	r0 := max(older.WCU, older.GSIWCU) / half
	r1 := max(newer.WCU, newer.GSIWCU) / half
	if r0 <= 0 || r1 < 1.5*r0 || r1 < p.keyWCU()/4 {
		return 1
	}
	return p.extrapolate(r0, r1) / r1
}

// trend is the demand the throttling implies, extrapolated to when a raise
// decided now would start: the demand each half of the window implies
// (capacity over the share let through), its growth from one half to the
// other continued linearly over the horizon, at most MaxGrowth times the
// newer half's. Every writer sees the same shares, so unlike the rate it
// does not depend on how many writers share the source. 0 without a full
// window, enough items in each half, or a clear rise (TrendRise).
func (p *Policy) trend(secs, capacity float64, older, newer Sample) float64 {
	half := float64(p.slots() / 2)
	minHalf := p.or(p.MinItems, DefaultMinItems) / 2
	if secs < float64(p.slots()) || half < 1 || older.Items < minHalf || newer.Items < minHalf {
		return 0
	}
	d0 := implied(capacity, float64(older.Throttled)/float64(older.Items))
	d1 := implied(capacity, float64(newer.Throttled)/float64(newer.Items))
	if d1 < TrendRise*d0 {
		return 0
	}
	return p.extrapolate(d0, d1)
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

// implied is the demand on keys that let capacity through and refuse the
// share throttled of what is asked of them; at most MaxStep times capacity.
func implied(capacity, throttled float64) float64 {
	return capacity / max(1-throttled, 1.0/MaxStep)
}

// need is the keys that take rate write units a second at the target
// utilisation, as bucketing.ShardsFor plans them.
func (p *Policy) need(rate float64) int {
	n := math.Ceil(rate / (p.keyWCU() * bucketing.TargetUtilisation))
	return int(max(1, min(n, bucketing.MaxShards)))
}

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

func (p *Policy) window() time.Duration {
	if p.Window > 0 {
		return p.Window
	}
	return DefaultWindow
}

func (p *Policy) slots() int { return max(1, int(p.window()/time.Second)) }
