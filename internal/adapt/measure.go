package adapt

import (
	"time"

	"github.com/shardline/shardline/internal/shardmap"
)

// Measured is what one writer measured a source to ask of each index,
// what each index's keys took of it, and which refused it.
type Measured struct {
	shardmap.Measure
	// Throttled says the writer could not keep up: DynamoDB throttled the
	// source, or the writer fell behind its events (paced on throttled
	// keys). Else it kept up.
	Throttled bool
}

// Measure is the write units a second this writer sees source ask of each
// index, for the caller to add up with what the other writers measured
// (shardmap.Demand). For items delivered in arrival order it is the rate
// they arrived at, by their arrival times, stored or not: what the source
// offers, whether the writer keeps up, is held to what its keys take, or
// drains a backlog. For items sent as they arrive (API requests), which
// have no backlog to read, it is the rate their keys took times the share
// left unstored. Beside it, what the source's keys took of the writer in
// the window, per wall second, and which indexes refused it: the keys of
// an index that refuses take what they took. A writer that keeps up with
// a source under ReportShare of its keys measures nothing: such a source
// is not worth a report. ok is false then, when the window is not yet full or
// does not show the arrival yet, or when the source was measured less than
// half a window ago: a writer reports at most twice a window.
func (p *Policy) Measure(source string, now time.Time, cur Counts) (m Measured, ok bool) {
	v, ok := p.view(source, now, cur)
	if !ok || v.secs < float64(p.slots()) {
		return m, false
	}
	over := p.over(v.seen, v.sum)
	m.Throttled = over >= MinOver || v.sum.Throttled >= p.or(p.MinThrottled, DefaultMinThrottled) && float64(v.sum.Throttled) >= ThrottleShare*float64(v.sum.Items)
	arrived, ok := p.arrival(v.offers[:], now, p.window().Seconds()/4)
	inOrder := !v.sum.Latest.IsZero() || v.offered
	switch {
	case ok:
		m.Table = arrived
	case !inOrder:
		m.Table = over * v.sum.WCU / v.secs // asked: stored, times the share unstored
	default:
		return m, false // offered in arrival order, too little to read a rate from
	}
	m.GSI = m.Table
	if v.sum.WCU > 0 {
		m.GSI = m.Table * v.sum.GSIWCU / v.sum.WCU
	}
	if !m.Throttled && m.Table < ReportShare*float64(cur.Shards)*p.keyWCU() && m.GSI < ReportShare*float64(cur.GSIShards)*p.keyWCU() {
		return m, false
	}
	// The GSI's keys in effect took the items placed on older table
	// keys too (Sample.ElsewhereGSIWCU); the table's keys in effect did
	// not.
	m.Took = shardmap.Rates{Table: v.sum.WCU / v.secs, GSI: (v.sum.GSIWCU + v.sum.ElsewhereGSIWCU) / v.secs}
	if (v.changed.IsZero() || now.Sub(v.changed) >= Settle) && v.sum.Elsewhere == 0 {
		m.Refused = p.refused(v.sum, cur)
	}
	m.Shards, m.GSIShards = cur.Shards, cur.GSIShards
	if ok {
		m.Behind = max(0, now.Sub(v.arrived).Seconds())
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

// Settled says whether writers as far behind the source's arrivals as
// behind seconds (a sum's Behind, the most any of its writers is) have
// got Settle past raised, when the base table's last raise took effect
// (shardmap.Raises.Table), in the source's arrivals. Until then one of
// them still writes, or has just written, events placed before the raise,
// on the old table keys, and its Took of the keys in effect, table and
// GSI, is what it had time for: a sum that adds it to the Took of a
// writer already past the raise is not the keys' ceiling. A writer does
// not report the refusal of its own window that holds such events
// (Measure), but it cannot tell that another writer's does. A GSI raise
// leaves no such backlog: an item's GSI key is placed under the GSI count
// in effect when it is written, whatever its time. Zero raised is
// settled.
func Settled(raised, now time.Time, behind float64) bool {
	return raised.IsZero() || !now.Add(-time.Duration(behind*float64(time.Second))).Before(raised.Add(Settle))
}

// Held is the indexes whose refusal no writer reports at now, after the
// raises r took effect (shardmap.Raised, read from the day's schedule,
// which every writer shares, whenever it began to write the source): an
// index for AfterRaise after its own raise, while the writers find its
// new keys' ceiling, and for Settle after the other index's. A raise of
// one index leaves the other's keys as they were, but not what the
// writers send them: writers held to the raised index's old keys sent
// them less, and for a while after the raise the new keys start at the
// paces the old ones had (internal/pace's families) and still hold the
// writers back. Past Settle the other index's keys take what they take.
func Held(r shardmap.Raises, now time.Time) shardmap.Indexes {
	within := func(at time.Time, d time.Duration) bool { return !at.IsZero() && now.Sub(at) < d }
	var held shardmap.Indexes
	if within(r.Table, AfterRaise) || within(r.GSI, Settle) {
		held |= shardmap.TableIndex
	}
	if within(r.GSI, AfterRaise) || within(r.Table, Settle) {
		held |= shardmap.GSIIndex
	}
	return held
}

// Awaited is the indexes whose refusal no writer reports while the other
// index's raise is decided but not yet in effect (last above cur, the
// counts in effect): the writers are still held by the raised index's
// old keys, so what the other index's keys take is what those let
// through, not their ceiling. Their throttles are the raised index's
// too, though a writer's pacer may lay them on the other index's key: a
// paced request of one item leans on neither key, and the pacer blames
// the one it already paces (internal/pace). In the quarter ramp the
// GSI's 8 keys were read at 2 or 3 WCU/s a key while the table's 4,
// their raise to 12 on its way, held the writers at 5 a key, and the GSI
// went to 13 or 14: a fourth step, in 2 runs of 12.
func Awaited(cur, last Counts) shardmap.Indexes {
	var in shardmap.Indexes
	if last.Shards > cur.Shards {
		in |= shardmap.GSIIndex
	}
	if last.GSIShards > cur.GSIShards {
		in |= shardmap.TableIndex
	}
	return in
}

// refused is the indexes that refused a window's sum under cur: whose
// keys the writer's pacer blamed for enough of its throttled items, or
// held back enough items for, to be a signal. The pacer blames both keys of an item when its request sent as
// many items to each (a paced request of one item, say); when both
// indexes are blamed, the one blamed half as often again as the other
// refused, else the one whose keys each carry more of the source (fewer
// keys), else both.
func (p *Policy) refused(sum Sample, cur Counts) shardmap.Indexes {
	signal := func(n int) bool {
		return n >= p.or(p.MinThrottled, DefaultMinThrottled) && float64(n) >= ThrottleShare*float64(sum.Items)
	}
	tn, gn := sum.TableThrottled+sum.TableHeld, sum.GSIThrottled+sum.GSIHeld
	t, g := signal(tn), signal(gn)
	if t && g {
		tn, gn := float64(tn), float64(gn)
		switch {
		case tn >= 1.5*gn || gn < 1.5*tn && cur.Shards < cur.GSIShards:
			g = false
		case gn >= 1.5*tn || cur.GSIShards < cur.Shards:
			t = false
		}
	}
	var in shardmap.Indexes
	if t {
		in |= shardmap.TableIndex
	}
	if g {
		in |= shardmap.GSIIndex
	}
	return in
}

// arrival is, for items delivered in arrival order, the write units a
// second that arrived, whether the writer stored them or not: what was
// offered to it over the arrival time it spans, from the oldest Since to
// the newest Arrived, of the offers made within OfferedFor of now. A
// writer held to what its keys take is still offered what the source
// sends. ok is false when those arrivals span less than span seconds.
func (p *Policy) arrival(offered []offer, now time.Time, span float64) (rate float64, ok bool) {
	var wcu float64
	var since, arrived time.Time
	for _, o := range offered {
		if o.at.IsZero() || now.Sub(o.at) > OfferedFor || o.at.After(now) {
			continue
		}
		wcu += o.wcu
		if since.IsZero() || o.since.Before(since) {
			since = o.since
		}
		if o.arrived.After(arrived) {
			arrived = o.arrived
		}
	}
	secs := arrived.Sub(since).Seconds()
	if arrived.IsZero() || secs < span {
		return 0, false
	}
	return wcu / secs, true
}

// Arrived is how far this writer got through source's arrivals, for items
// delivered in arrival order: the newest arrival offered to it, or zero.
func (p *Policy) Arrived(source string) time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	if w := p.src[source]; w != nil {
		return w.arrived
	}
	return time.Time{}
}

// view is a window read for a decision: its sum, and how long it spans.
type view struct {
	arrived time.Time // the newest arrival offered, across counts
	offers  [offers]offer
	offered bool      // anything was ever offered: the items arrive in order
	changed time.Time // when the counts changed to these
	sum     Sample
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
	v.arrived, v.offers, v.offered, v.changed = w.arrived, w.offers, w.next > 0, w.changed
	oldest := now.Unix() - int64(len(w.slots)) + 1
	for _, sl := range w.slots {
		if sl.sec < oldest || sl.sec > now.Unix() {
			continue
		}
		v.sum.add(sl.Sample)
		v.seen = append(v.seen, sl)
	}
	if least := p.or(p.MinItems, DefaultMinItems); v.sum.Items < least && v.sum.WCU < float64(least) {
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
// over the arrival time the writer got through in it (Sample.Latest): a
// writer that stores a second of arrivals every three seconds is asked
// three times what its keys take. For items sent as they arrive, it is the items asked for over
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
		// A writer that keeps up stores a record up to a poll (a second)
		// after it arrived, so the newest arrival a slot holds lags its
		// second by up to one: a second of slack keeps a sparse source's
		// jitter from reading as a writer behind.
		got := last.Latest.Sub(first.Latest).Seconds() + 1
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
