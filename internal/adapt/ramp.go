package adapt

import (
	"math"
	"time"

	"github.com/shardline/shardline/internal/shardmap"
)

// Reading a ramp over minutes (ramping).
const (
	// RampEvery is how far apart the sums ramping reads a ramp from are
	// kept: a minute, where rising reads one from sums a window apart.
	RampEvery = time.Minute
	// RampRise is the rise of a source's summed demand over each of three
	// RampEvery running from which ramping reads a ramp. A linear ramp
	// rises by less and less of itself: the quarter ramp's sums, 7 to 9
	// minutes into a ramp of ten, rose by 8 to 14 % a minute, and by 2 to
	// 4 % a window, under rising's TrendRise.
	RampRise = 1.05
	// RampSteady is how many times the slowest minute's rise of a ramp
	// the fastest may be: the sums are averages over up to OfferedFor of
	// arrivals, read by writers whose batches stand at different places,
	// and the quarter ramp's minutes rose from 0.014 to 0.039 WCU/s a
	// second.
	RampSteady = 3
)

// ramping remembers demand, the sum of source's writers' measures at now
// under cur, when it comes RampEvery or more after the last sum it kept,
// and when the last four it kept are a ramp, returns demand continued to
// when a raise decided now would start, at the ramp's slope over their
// three minutes: from the last sum's time, plus how far behind the
// source's arrivals its writers were (what they read arrived that long
// before), plus the horizon; at most MaxGrowth times the last sum. A ramp
// is read by the same writers, and rises by RampRise or more each minute,
// steadily (RampSteady). It may be read across a raise: its sums are what
// the source sent, over its arrivals, not what keys took. Read only under
// the same counts, the quarter ramp's table, raised two minutes after the
// GSI's second step took effect, had no ramp to read and was sized on the
// 21 to 24 WCU/s then read by writers two minutes behind: 7 keys, where a
// source of 25 then drained its backlog at 3 a key and was raised again.
//
// Its slope is over the source's arrivals, not the wall's: over a minute
// in which the writers caught up (they are less far behind at its end),
// they got through more than a minute of arrivals, and a backlog played
// back faster than it was made does not read as a steeper ramp. Over a
// minute in which they fell behind, the wall's minute is kept, the
// smaller slope. ForDemand sizes a raise on it that the demand as it is
// asks for, and never raises on it alone: a ramp read too steep costs a
// step too large, never a step too many.
func (p *Policy) ramping(source string, now time.Time, cur Counts, demand shardmap.Measure, writers int) (shardmap.Rates, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.ramps = bounded(p.ramps)
	sums := p.ramps[source]
	if last := sums[trend-1]; last.at.IsZero() || now.Sub(last.at) >= RampEvery {
		copy(sums[:], sums[1:])
		sums[trend-1] = summed{at: now, under: cur, writers: writers, demand: demand.Rates, behind: demand.Behind}
		p.ramps[source] = sums
	}
	for _, s := range sums {
		if s.at.IsZero() || s.writers != writers {
			return demand.Rates, false
		}
	}
	last := sums[trend-1]
	if last.at.Sub(sums[0].at) > 2*(trend-1)*RampEvery {
		return demand.Rates, false // a gap in the sums: not one ramp
	}
	ahead := now.Sub(last.at).Seconds() + last.behind + p.horizon().Seconds()
	out := shardmap.Rates{
		Table: max(demand.Table, rampTo(sums, ahead, func(s summed) float64 { return s.demand.Table })),
		GSI:   max(demand.GSI, rampTo(sums, ahead, func(s summed) float64 { return s.demand.GSI })),
	}
	return out, out != demand.Rates
}

// rampTo is an index's sum d of sums continued ahead seconds past the
// last, at the ramp's slope over the source's arrivals (see ramping); 0
// when the sums are not a ramp.
func rampTo(sums [trend]summed, ahead float64, d func(summed) float64) float64 {
	lo, hi, span := math.Inf(1), 0.0, 0.0
	for i := 1; i < trend; i++ {
		d0, d1 := d(sums[i-1]), d(sums[i])
		if d0 <= 0 || d1 < RampRise*d0 {
			return 0
		}
		secs := sums[i].at.Sub(sums[i-1].at).Seconds()
		secs = max(secs, secs+sums[i-1].behind-sums[i].behind) // caught up: more arrivals than seconds
		slope := (d1 - d0) / secs
		lo, hi, span = min(lo, slope), max(hi, slope), span+secs
	}
	if lo*RampSteady < hi {
		return 0 // rises, not a ramp
	}
	latest := d(sums[trend-1])
	return min(MaxGrowth*latest, latest+(latest-d(sums[0]))/span*ahead)
}

// horizon is how far ahead a raise plans: Horizon, or its default.
func (p *Policy) horizon() time.Duration {
	if p.Horizon > 0 {
		return p.Horizon
	}
	return DefaultHorizon
}
