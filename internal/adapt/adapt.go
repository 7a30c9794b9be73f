// Package adapt decides when a source's write shard counts must rise, so
// that a source that turns hot is spread over more keys without an operator,
// once, and no further than it needs. It only decides: the caller records a
// raise in the shard record. docs/adaptive.md has the reasoning.
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
	// on, or write units stored: a writer paced to 4 events a second of 12
	// KB stores 40 items in a window, and 480 write units. Counted in
	// items alone, it never reported, and the sum lacked its quarter of
	// the source for a minute (the overload was sized to 3 keys so).
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
	// MeasuredOver is how much more than its keys were measured to take
	// a source must ask before they are raised: writers paced on a key
	// take 75 to 95 % of its ceiling (internal/pace's tests), so what
	// they took reads it low by up to a quarter, and a source asking a
	// tenth more than they took may still fit.
	MeasuredOver = 1.25
	// MeasuredSize is how much above what its keys were measured to take
	// a raise sizes a key's ceiling: a tenth. Readings ran from 0.72 to
	// 1.3 of the partition model's ceiling (paced writers read it low; a
	// window that begins in a key's burst reads it high). Sized a quarter
	// above, the overload read 281 on keys of 250 and was raised to 3 for
	// 720 WCU/s, 96 % of their ceiling, and its backlog drained too
	// slowly; sized on the reading, the sources sharing a partition read
	// 130 of the 125 each gets and were raised to 3 keys where 2 carry
	// them, and the minute the backlog drained onto the new keys was 10.7 %
	// throttled.
	MeasuredSize = 1.1
	// MeasuredFor is how long the ceilings measured of a source's keys
	// are averaged over (Policy.mean): a writer drains a 500-record batch
	// in order and waits on its slowest key, so what keys took of it swings
	// from window to window (0.9 to 25 WCU/s on keys of 5, in the quarter
	// ramp), and a raise decided on one low window is a raise too many.
	MeasuredFor = 2 * time.Minute
	// MinOver is how much faster than it is stored a throttled source
	// must arrive to be measured: below it the writer keeps up, and the
	// throttling is a burst its keys absorb.
	MinOver = 1.1
	// Settle is how long after the counts in effect change what a
	// source's keys take is not learned from its writes: the backlog
	// built before them drains on their keys meanwhile, under the writers'
	// paces learned on the old keys, which grow back and compete, and what
	// the keys take of them is not yet their ceiling (the overload
	// simulation learned a quarter of it 26 s after a raise).
	Settle = time.Minute
	// AfterRaise is how long after a raise of an index takes effect no
	// writer reports that index's keys refusing, whenever it began to
	// write the source: a raise is sized once, and a second one sized in
	// the minutes after it reads writers still finding the new keys'
	// ceiling. Settle is a writer's own memory of the counts changing; a
	// writer that starts after the change has none, and the quarantine
	// flood was raised a second time so (4 -> 12 on a reading of 3 WCU/s
	// a key, where the first raise read 14). The other index's keys are
	// the same keys: they are held for Settle only (Held). Ingest applies
	// it from the day's schedule, which every writer shares
	// (shardmap.Raised).
	AfterRaise = 5 * time.Minute
	// OfferedFor is how long what a writer was offered counts in what it
	// measures: a Kinesis batch is offered when its write begins, and a
	// write lasts up to the function's timeout.
	OfferedFor = 2 * time.Minute
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
	// TableHeld and GSIHeld are the items the writer's pacer held back
	// at least once for the pace of their table key, or their GSI key
	// (writer.Result.Held): refused by that index without a request. A
	// pacer that has learned a key's ceiling keeps DynamoDB's throttles
	// rare, and what it holds back is then the refusal left to see.
	TableHeld, GSIHeld int
	// Elsewhere is the items written under other counts (a backlog
	// stamped before a raise, on the keys it was placed on): while it
	// drains, what the keys in effect take of the writer is not their
	// ceiling, only what it had time for.
	Elsewhere int
	// ElsewhereGSIWCU is the GSI write units stored of the Elsewhere
	// items placed on the GSI count in effect: an item's GSI key is
	// placed under the GSI count in effect when it is written, whatever
	// its table key, so the GSI's keys in effect took them, and what they
	// took counts them (Measured.Took). Left out, a writer draining a
	// backlog stamped before a table raise read the GSI's keys at a third
	// of what they took.
	ElsewhereGSIWCU float64
	// Latest is the newest arrival time (a Kinesis record's) among the
	// items stored, for items delivered in the order they arrived (a
	// Kinesis shard): how far the writer has got through the source's
	// records. Not the events' own times, which a source may stamp to the
	// minute. Zero for items that arrive as they are sent (an API request).
	Latest time.Time
	// Offered is the write units of the items delivered to the writer,
	// stored or not, that arrived (a Kinesis record's arrival time) past
	// Since, for items delivered in arrival order; Arrived is the newest
	// arrival among them. Since is how far the writer had got through
	// the source's arrivals before (Policy.Arrived), or the first of them:
	// Offered over Arrived - Since is the rate the source sent at, however
	// slowly the writer stores it.
	Offered        float64
	Since, Arrived time.Time
	// Began is when the write began: its items, write units and throttles
	// are spread over the seconds from Began to the sample's time. Zero
	// puts them in that second.
	Began time.Time
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

	mu       sync.Mutex
	src      map[string]*window
	sums     map[string][trend - 1]summed // the last sums ForDemand kept, a window or more apart, per source
	writers  map[string]seen              // the most writers lately summed, per source
	ceilings map[string][2]float64        // the last credible ceilings measured, table and GSI, per source
	readings map[string][]reading         // the ceilings measured lately, per source (mean)
	ramps    map[string][trend]summed     // the last sums ramping kept, a RampEvery or more apart, per source
}

// summed is a source's demand as the writers' sum gave it at a time,
// under counts.
type summed struct {
	at      time.Time
	under   Counts
	writers int // how many writers' measures were summed
	demand  shardmap.Rates
	behind  float64 // how far behind the source's arrivals the writers were, in seconds (the most of any)
}

// window holds a source's samples in one-second slots, taken while the
// counts in effect were under.
type window struct {
	under    Counts
	start    time.Time // first sample under these counts
	changed  time.Time // when the counts changed to these; zero for a source's first
	slots    []slot
	reported time.Time // when Measure last answered for the source
	arrived  time.Time // the newest arrival offered, across counts
	// offers are the last samples' offers, across counts: a batch is
	// offered once, when its write begins, and a write may outlast a
	// window.
	offers [offers]offer
	next   int // where the next offer goes
}

// offer is what one sample was offered, at when.
type offer struct {
	at             time.Time
	since, arrived time.Time
	wcu            float64
}

// offers is how many samples' offers a window keeps.
const offers = 8

type slot struct {
	sec int64
	Sample
}

// Observe records a sample of source, written at now while the counts in
// effect were cur. Samples taken under other counts are forgotten: once a
// raise takes effect, throttling seen before it says nothing. A sample
// that Began seconds ago is spread evenly over those seconds, so that a
// long write (a batch paced for half a minute) counts at the rate it went.
func (p *Policy) Observe(source string, now time.Time, cur Counts, s Sample) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.src == nil {
		p.src = map[string]*window{}
	}
	w := p.src[source]
	n := p.slots()
	from := now
	if !s.Began.IsZero() && s.Began.Before(now) {
		from = s.Began
	}
	switch {
	case w == nil:
		w = &window{under: cur, start: from, slots: make([]slot, n)}
		p.src[source] = w
	case w.under != cur:
		// What a write took before the counts changed says nothing of
		// the new keys: the window starts now, and what the keys take is
		// not learned from it for Settle, while the writers' paces,
		// learned on the old keys, grow back. What the source offered is
		// the source's.
		w = &window{under: cur, start: now, changed: now, slots: make([]slot, n), arrived: w.arrived, offers: w.offers, next: w.next}
		p.src[source] = w
	}
	if s.Offered > 0 {
		w.offers[w.next%offers] = offer{at: now, since: s.Since, arrived: s.Arrived, wcu: s.Offered}
		w.next++
	}
	if from.Before(w.start) {
		s.Items, s.Stored, s.Throttled, s.TableThrottled, s.GSIThrottled, s.Elsewhere, s.WCU, s.GSIWCU, s.ElsewhereGSIWCU = 0, 0, 0, 0, 0, 0, 0, 0, 0
		s.TableHeld, s.GSIHeld = 0, 0
		from = now // counted under other counts: only its progress counts
	}
	if s.Arrived.After(w.arrived) {
		w.arrived = s.Arrived
	}
	first, last := from.Unix(), now.Unix()
	parts := spread(s, int(last-first+1))
	for i := max(0, len(parts)-n); i < len(parts); i++ {
		sec := first + int64(i)
		sl := &w.slots[int(sec%int64(n)+int64(n))%n]
		if sl.sec != sec {
			*sl = slot{sec: sec}
		}
		sl.add(parts[i])
	}
}

// spread splits s evenly over k seconds: counts and write units in even
// parts that add up to s's, what the sample says of the source's progress
// in the last.
func spread(s Sample, k int) []Sample {
	if k <= 1 {
		return []Sample{s}
	}
	parts := make([]Sample, k)
	share := func(x int, i int) int { return (i+1)*x/k - i*x/k }
	for i := range parts {
		parts[i] = Sample{Items: share(s.Items, i), Stored: share(s.Stored, i), Throttled: share(s.Throttled, i),
			TableThrottled: share(s.TableThrottled, i), GSIThrottled: share(s.GSIThrottled, i), Elsewhere: share(s.Elsewhere, i),
			TableHeld: share(s.TableHeld, i), GSIHeld: share(s.GSIHeld, i),
			WCU: s.WCU / float64(k), GSIWCU: s.GSIWCU / float64(k), ElsewhereGSIWCU: s.ElsewhereGSIWCU / float64(k)}
	}
	last := &parts[k-1]
	last.Latest = s.Latest
	return parts
}

func (s *Sample) add(o Sample) {
	s.Items += o.Items
	s.Stored += o.Stored
	s.WCU += o.WCU
	s.GSIWCU += o.GSIWCU
	s.Throttled += o.Throttled
	s.TableThrottled += o.TableThrottled
	s.GSIThrottled += o.GSIThrottled
	s.TableHeld += o.TableHeld
	s.GSIHeld += o.GSIHeld
	s.Elsewhere += o.Elsewhere
	s.ElsewhereGSIWCU += o.ElsewhereGSIWCU
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
