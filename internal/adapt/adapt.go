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
//     more than TargetUtilisation of its partition keys at twice that rate:
//     a raise takes shardmap.Lead to take effect, and a rising source keeps
//     rising meanwhile;
//   - when throttling is concentrated on the source (at least ThrottleShare
//     of its items in the window, and at least MinThrottled of them): its
//     demand is above what its keys take, by an unknown amount, since a
//     throttled writer only sees the rate that got through. Then the
//     index whose keys carry the most per key gets Step times its current
//     count.
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
	// MinThrottled is the fewest throttled items that count as a signal:
	// one unprocessed item is a blip, not a hot key.
	MinThrottled = 5
	// MinItems is the fewest items in the window the policy decides on.
	MinItems = 50
	// Step is the factor a throttled index's count grows by.
	Step = 4
)

// Counts are a source's shard counts: base table and GSI.
type Counts struct {
	Shards, GSIShards int
}

// Of is the counts of a schedule step.
func Of(s bucketing.Step) Counts { return Counts{s.Shards, s.GSIShards} }

// Sample is what one write of a source's items showed.
type Sample struct {
	Items     int     // items written or attempted
	WCU       float64 // base-table write units the items cost, once each
	GSIWCU    float64 // GSI write units the items cost, once each
	Throttled int     // items DynamoDB throttled at least once
}

// Policy keeps a short window of samples per source. The zero value uses
// the defaults; it is safe for concurrent use.
type Policy struct {
	Max    int           // most shards a raise asks for; default DefaultMax
	Window time.Duration // traffic a decision weighs; default DefaultWindow

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
	sl.Items += s.Items
	sl.WCU += s.WCU
	sl.GSIWCU += s.GSIWCU
	sl.Throttled += s.Throttled
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
	var sum Sample
	if w != nil && w.under == cur {
		oldest := now.Unix() - int64(len(w.slots)) + 1
		for _, sl := range w.slots {
			if sl.sec >= oldest && sl.sec <= now.Unix() {
				sum.Items += sl.Items
				sum.WCU += sl.WCU
				sum.GSIWCU += sl.GSIWCU
				sum.Throttled += sl.Throttled
			}
		}
	}
	var start time.Time
	if w != nil {
		start = w.start
	}
	p.mu.Unlock()
	if sum.Items < MinItems {
		return Decision{}, false
	}
	// The window's length, or the time since the first sample under these
	// counts if that is shorter, and at least a second.
	secs := min(p.window().Seconds(), now.Sub(start).Seconds()+1)
	secs = max(secs, 1)
	d := Decision{Rate: sum.WCU / secs, GSIRate: sum.GSIWCU / secs, Throttled: float64(sum.Throttled) / float64(sum.Items)}
	// What the measured rate needs, planned at twice the rate: a raise
	// takes effect only after shardmap.Lead.
	needN := bucketing.ShardsFor(2*d.Rate, 1)
	needG := bucketing.ShardsFor(2*d.GSIRate, 1)
	reason := "rate"
	if sum.Throttled >= MinThrottled && d.Throttled >= ThrottleShare {
		reason = "throttled"
		loadN := d.Rate / float64(cur.Shards)
		loadG := d.GSIRate / float64(cur.GSIShards)
		hot := max(loadN, loadG)
		if loadN >= hot/2 {
			needN = max(needN, Step*cur.Shards)
		}
		if loadG >= hot/2 {
			needG = max(needG, Step*cur.GSIShards)
		}
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
