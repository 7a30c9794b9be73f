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
	// TableThrottled and GSIThrottled are the throttled items whose
	// throttling was laid on their table key, or their GSI key
	// (writer.Result.Blame): which index refused them.
	TableThrottled, GSIThrottled int
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
	// KeyWCU is the write units a second one partition key value is
	// expected to take, until its throttling shows less: default
	// bucketing.PartitionWCU, DynamoDB's nominal figure. A key that
	// refuses writes takes what it took (Measure, ForDemand). A test that
	// scales its traffic down scales this nominal figure, MinItems and
	// MinThrottled with it; it never tells the policy its model's ceiling.
	KeyWCU       float64
	MinItems     int           // default DefaultMinItems
	MinThrottled int           // default DefaultMinThrottled
	Horizon      time.Duration // default DefaultHorizon

	mu   sync.Mutex
	src  map[string]*window
	sums map[string][trend - 1]summed // the last sums ForDemand kept, a window or more apart, per source
}

// summed is a source's demand as the writers' sum gave it at a time,
// under counts.
type summed struct {
	at      time.Time
	under   Counts
	writers int // how many writers' measures were summed
	demand  shardmap.Rates
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
	s.TableThrottled += o.TableThrottled
	s.GSIThrottled += o.GSIThrottled
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
