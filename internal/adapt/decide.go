package adapt

import (
	"fmt"
	"math"
	"time"

	"github.com/shardline/shardline/internal/shardmap"
	"github.com/shardline/shardline/pkg/bucketing"
)

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

// ForDemand is the raise source needs that asks demand of its indexes at
// now, the sum of its writers' Measure (throttled: this writer measured it
// throttled, for the reason logged): each index whose keys the demand is
// over rises to carry it at the target utilisation, unless the last step
// carries it at the ceiling. A key's ceiling is what it was measured to
// take when its index refused writes (capacity), the mean of what the
// same keys were measured to take within MeasuredFor (mean), else KeyWCU.
// When the sum rose steadily over the last three windows (a ramp, see
// rising), the rise is continued to when a raise decided now would
// start, unless a writer is more than a window behind the source's
// arrivals: it then reads a backlog, whose rise is the source's past
// played back faster than it was made, not a rise to come. When the sums
// rose steadily over the last three minutes (ramping), a raise the demand
// asks for is sized for that ramp continued to when it would start, read
// over the source's arrivals, however far behind the writers are; the
// ramp alone asks for no raise. A step still pending for an index must be
// outgrown twice over: the demand was measured under the counts it
// replaces, and a raise that covers it is on its way. writers is how many
// writers' measures were summed, for the log.
func (p *Policy) ForDemand(source string, now time.Time, cur, last Counts, demand shardmap.Measure, writers int, throttled bool) (Decision, bool) {
	reason := "rate"
	if throttled {
		reason = "throttled"
	}
	asked := demand.Rates
	if ahead, ok := p.rising(source, now, cur, asked, writers); ok && demand.Behind <= p.window().Seconds() {
		asked, reason = ahead, reason+", rising"
	}
	// Along a ramp read over minutes, a raise the demand asks for is
	// sized for the ramp continued (ramping); the ramp alone asks none.
	plan, ramped := p.ramping(source, now, cur, demand, writers)
	plan = shardmap.Rates{Table: max(plan.Table, asked.Table), GSI: max(plan.GSI, asked.GSI)}
	d := Decision{Demand: max(asked.Table, asked.GSI)}
	// What a key takes is what it took of every writer: a sum that lacks
	// a writer seen lately measures less, and so may a sum of writers
	// that grew a window ago or less: the source's other writers may not
	// have filled a window to report yet.
	refused := FewerKeys(demand.Refused, cur)
	if n, grew := p.fleet(source, now, writers); writers < n || now.Sub(grew) < p.window() {
		refused = 0
	}
	table := p.capacity(cur.Shards, asked.Table, demand.Took.Table, refused&shardmap.TableIndex != 0)
	gsi := p.capacity(cur.GSIShards, asked.GSI, demand.Took.GSI, refused&shardmap.GSIIndex != 0)
	table, gsi = p.mean(source, now, cur, demand.Took, table, gsi)
	table, gsi = p.credible(source, table, gsi)
	d.To = last
	if to, cover := p.raise(cur.Shards, last.Shards, asked.Table, plan.Table, table); cover > last.Shards {
		d.To.Shards, d.Cover.Shards = max(to, last.Shards+1), cover
	}
	if to, cover := p.raise(cur.GSIShards, last.GSIShards, asked.GSI, plan.GSI, gsi); cover > last.GSIShards {
		d.To.GSIShards, d.Cover.GSIShards = max(to, last.GSIShards+1), cover
	}
	d.To = Counts{min(max(d.To.Shards, last.Shards), max(p.max(), last.Shards)), min(max(d.To.GSIShards, last.GSIShards), max(p.max(), last.GSIShards))}
	if d.To == last {
		return Decision{}, false
	}
	p.raised(source, table, gsi)
	d.Reason = fmt.Sprintf("%s: %d writers measure %.0f WCU/s base, %.0f WCU/s GSI under %d/%d shards; keys take %s base, %s GSI",
		reason, writers, asked.Table, asked.GSI, cur.Shards, cur.GSIShards, table, gsi)
	if ramped && plan != asked {
		d.Demand = max(plan.Table, plan.GSI)
		d.Reason += fmt.Sprintf("; sized for the ramp continued, %.0f WCU/s base, %.0f WCU/s GSI", plan.Table, plan.GSI)
	}
	return d, true
}

// FewerKeys is the indexes a sum shows refusing that are read as
// refusing under cur: when its writers' pacers laid their refusals on
// different indexes, the one whose keys each carry more of the source
// (fewer keys), as a writer's own refused does when both are blamed; at
// equal counts both. Writers held by one index's keys send the other's
// less, and what those took is not their ceiling: in the quarter ramp,
// one writer's pacer laid the GSI's refusal on the table while the GSI's
// 2 keys held both writers, the sum read the table's 4 keys at 2 WCU/s a
// key, and the table went to 15 or 18 where 8 carry the source. An index
// refusing that is not to be read (Held) is left out after this, not
// before: it still holds the writers.
func FewerKeys(refused shardmap.Indexes, cur Counts) shardmap.Indexes {
	if refused != shardmap.TableIndex|shardmap.GSIIndex {
		return refused
	}
	switch {
	case cur.Shards < cur.GSIShards:
		return shardmap.TableIndex
	case cur.GSIShards < cur.Shards:
		return shardmap.GSIIndex
	}
	return refused
}

// ceiling is what one key of an index takes, in write units a second, and
// whether that was measured.
type ceiling struct {
	wcu      float64
	measured bool
}

func (c ceiling) String() string {
	if c.measured {
		return fmt.Sprintf("%.0f WCU/s (measured)", c.wcu)
	}
	return fmt.Sprintf("%.0f WCU/s (nominal)", c.wcu)
}

// capacity is what each of an index's keys takes: when the index refused
// writes, what they took (took over keys), at most KeyWCU, which stays the
// first guess and the most a key is expected to take. Keys that took less
// than a MaxOver-th of what they were asked measured a stalled writer, not
// their ceiling: a raise learned from them would multiply the index's
// keys by more than MaxOver.
func (p *Policy) capacity(keys int, asked, took float64, refused bool) ceiling {
	nominal := p.keyWCU()
	if !refused || keys <= 0 || took*MaxOver < asked {
		return ceiling{wcu: nominal}
	}
	c := min(nominal, took/float64(keys))
	return ceiling{wcu: c, measured: c < nominal}
}

// raise is the keys an index of keys (pending in its last step) needs to
// carry rate on keys of ceiling c at the target utilisation, or plan when
// that is more (rate continued along a ramp), and the keys that carry
// rate at the ceiling; 0, 0 when its keys carry rate. Keys whose ceiling
// was measured carry what they took and somewhat more: rate must be
// MeasuredOver times that. A step pending must be outgrown twice over.
func (p *Policy) raise(keys, pending int, rate, plan float64, c ceiling) (to, cover int) {
	over := 1.0
	if c.measured {
		over = MeasuredOver
	}
	if rate <= over*float64(keys)*c.wcu {
		return 0, 0
	}
	size := c.wcu
	if c.measured {
		// What writers took reads a key's ceiling low, or at times
		// high: a raise sizes it a tenth above the reading.
		size = min(p.keyWCU(), c.wcu*MeasuredSize)
	}
	cover = atCeiling(rate, size)
	if pending > keys && cover <= 2*pending {
		return 0, 0
	}
	return p.clamp(need(max(rate, plan), size)), cover
}

// credible is the ceilings measured of source's keys, table and GSI, less
// any that is under half what the index's keys were measured to take when
// it was last raised on a measure: spreading a source over more keys does
// not halve what each takes, so such a measure reads writers that have
// not found the new keys' ceiling yet.
func (p *Policy) credible(source string, table, gsi ceiling) (ceiling, ceiling) {
	p.mu.Lock()
	defer p.mu.Unlock()
	was := p.ceilings[source]
	out := [2]ceiling{table, gsi}
	for i, c := range out {
		if c.measured && c.wcu < was[i]/2 {
			out[i] = ceiling{wcu: p.keyWCU()}
		}
	}
	return out[0], out[1]
}

// reading is the ceilings measured of a source's keys at a time, under
// counts: table and GSI, 0 for an index not measured; and what a key of
// each index took then, measured or not.
type reading struct {
	at    time.Time
	under Counts
	wcu   [2]float64
	took  [2]float64
}

// readings bounds the readings kept of a source: two a window, a writer
// deciding at most at each of its reports, over MeasuredFor.
const readings = 4 * int(MeasuredFor/DefaultWindow)

// mean remembers the ceilings measured of source's keys at now, under
// cur, and what they took (took, over cur's keys), and returns each
// measured ceiling as the mean of those measured of the same keys (under
// cur) within MeasuredFor: what one window's sum read of keys that
// refused swings with where each writer's batch stood, and a raise
// decided on the lowest would be one too many. Nor is it less than what
// the same keys took a key on average over those readings, refused or
// not: keys take at least what they took, and an index the sum shows
// refusing once (one writer's pacer blamed it, in a window where the
// other's batch waited) would otherwise be measured on that one low
// window. An index not measured now stays on its nominal figure.
func (p *Policy) mean(source string, now time.Time, cur Counts, took shardmap.Rates, table, gsi ceiling) (ceiling, ceiling) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.readings = bounded(p.readings)
	r := reading{at: now, under: cur, took: [2]float64{perKey(took.Table, cur.Shards), perKey(took.GSI, cur.GSIShards)}}
	for i, c := range [2]ceiling{table, gsi} {
		if c.measured {
			r.wcu[i] = c.wcu
		}
	}
	kept := []reading{r}
	for _, o := range p.readings[source] {
		if o.under == cur && now.Sub(o.at) < MeasuredFor && len(kept) < readings {
			kept = append(kept, o)
		}
	}
	p.readings[source] = kept
	out := [2]ceiling{table, gsi}
	for i := range out {
		if !out[i].measured {
			continue
		}
		var sum, all float64
		var n int
		for _, o := range kept {
			all += o.took[i]
			if o.wcu[i] > 0 {
				sum += o.wcu[i]
				n++
			}
		}
		out[i].wcu = max(sum/float64(n), all/float64(len(kept)))
		if out[i].wcu >= p.keyWCU() {
			out[i] = ceiling{wcu: p.keyWCU()}
		}
	}
	return out[0], out[1]
}

// perKey is what each of keys took of took write units a second.
func perKey(took float64, keys int) float64 {
	if keys <= 0 {
		return 0
	}
	return took / float64(keys)
}

// raised remembers the ceilings measured that a raise of source was sized
// on.
func (p *Policy) raised(source string, table, gsi ceiling) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.ceilings = bounded(p.ceilings)
	was := p.ceilings[source]
	for i, c := range [2]ceiling{table, gsi} {
		if c.measured {
			was[i] = c.wcu
		}
	}
	p.ceilings[source] = was
}

// fleet remembers that writers' measures of source were summed at now,
// and returns the most summed within OfferedFor, the writers of the
// source lately, and when that many were first summed.
func (p *Policy) fleet(source string, now time.Time, writers int) (n int, grew time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.writers = bounded(p.writers)
	w := p.writers[source]
	switch {
	case writers > w.n || now.Sub(w.at) > OfferedFor:
		w = seen{writers, now, now}
	case writers == w.n:
		w.at = now
	}
	p.writers[source] = w
	return w.n, w.grew
}

// seen is how many writers were summed, when last, and when first.
type seen struct {
	n        int
	at, grew time.Time
}

// rising remembers demand, the sum of writers' measures, as source's at
// now, a window or more after the sum it remembers, and when the last
// four sums are a ramp, returns demand continued to the horizon at the
// ramp's slope over the three windows, at most MaxGrowth times. A ramp
// rises by TrendRise or more over each window, and steadily: the slowest
// window's rise is at least half the fastest's. Whatever rises once or
// twice, a step in the traffic, a burst after a stalled writer catches
// up, a writer whose report joins the sum, the noise of a flat source's
// sums, is planned for as it is now: continued eight minutes ahead, a
// window's rise of 10 % is a plan for five times the demand.
func (p *Policy) rising(source string, now time.Time, cur Counts, demand shardmap.Rates, writers int) (shardmap.Rates, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.sums = bounded(p.sums)
	prev, ok := p.sums[source]
	last := prev[len(prev)-1]
	if ok && now.Sub(last.at) < p.window() && last.under == cur && last.writers == writers {
		return demand, false // too soon to tell a rise: keep the older sums
	}
	kept := append(prev[1:], summed{at: now, under: cur, writers: writers, demand: demand})
	p.sums[source] = [trend - 1]summed(kept)
	if !ok {
		return demand, false
	}
	sums := append(prev[:1:1], kept...) // the trend sums, oldest first
	// Sums read under other counts measured other keys: a rise across a
	// raise is the backlog the raise let through. Sums of other writers
	// add up other shares of the source.
	for _, s := range sums {
		if s.at.IsZero() || s.under != cur || s.writers != writers {
			return demand, false
		}
	}
	span := now.Sub(sums[0].at)
	if span > time.Duration(2*len(sums))*p.window() {
		return demand, false
	}
	horizon := p.horizon()
	ahead := func(d func(summed) float64) float64 {
		lo, hi := math.Inf(1), 0.0
		for i := 1; i < len(sums); i++ {
			d0, d1 := d(sums[i-1]), d(sums[i])
			if d0 <= 0 || d1 < TrendRise*d0 {
				return d(sums[len(sums)-1])
			}
			slope := (d1 - d0) / sums[i].at.Sub(sums[i-1].at).Seconds()
			lo, hi = min(lo, slope), max(hi, slope)
		}
		latest := d(sums[len(sums)-1])
		if lo < hi/2 {
			return latest // rises, not a ramp
		}
		return min(MaxGrowth*latest, latest+(latest-d(sums[0]))/span.Seconds()*horizon.Seconds())
	}
	out := shardmap.Rates{Table: ahead(func(s summed) float64 { return s.demand.Table }),
		GSI: ahead(func(s summed) float64 { return s.demand.GSI })}
	return out, out != demand
}

// trend is how many sums, a window or more apart, rising reads a ramp
// from: three windows' rises.
const trend = 4

// need is the keys of ceiling c that take rate write units a second at
// the target utilisation.
func need(rate, c float64) int {
	n := math.Ceil(rate / (c * bucketing.TargetUtilisation))
	return int(max(1, min(n, bucketing.MaxShards)))
}

// atCeiling is the keys of ceiling c that take rate write units a second
// at their ceiling.
func atCeiling(rate, c float64) int {
	n := math.Ceil(rate / c)
	return int(max(1, min(n, bucketing.MaxShards)))
}

// clamp bounds a count by Max.
func (p *Policy) clamp(n int) int { return min(n, p.max()) }

// maxSources bounds how many sources a policy remembers anything of: a
// map of a source's sums, readings or ceilings that outgrows it is
// started again, so that a container writing for ever more sources holds
// a bounded memory. A source forgotten is decided afresh, as a new one.
const maxSources = 1 << 16

// bounded is m, or a new map when m is nil or holds more than maxSources.
func bounded[V any](m map[string]V) map[string]V {
	if m == nil || len(m) > maxSources {
		return map[string]V{}
	}
	return m
}
