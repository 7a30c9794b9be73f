package heatsim

import (
	"math"
	"time"
)

// Result is one design's outcome.
type Result struct {
	Design          string  `json:"design"`
	HottestLoad     float64 `json:"hottest_partition_load"` // peak demand on one partition / its ceiling
	ThrottledPct    float64 `json:"throttled_writes_pct"`
	GSIThrottledPct float64 `json:"gsi_backpressure_throttled_pct"`
	HottestGSILoad  float64 `json:"hottest_gsi_partition_load"`
	ReadRequests    int     `json:"read_requests_newest100_24h"`
	// Raises are the raises an adaptive design recorded, in order.
	Raises []Raise `json:"raises,omitempty"`
	// Unrecorded counts the raises an adaptive design's writers asked for
	// that the shard record did not take: it already held the counts
	// (another writer raised first) or the step would start after the day.
	Unrecorded int `json:"unrecorded_raises,omitempty"`

	start time.Time
	secs  []second // every simulated second, in order
}

// second is the write units one simulated second attempted and throttled.
type second struct{ attempted, throttled float64 }

// ThrottledPctFrom is the share of writes throttled from t to the end of
// the run, in percent (0 when nothing was attempted then).
func (r Result) ThrottledPctFrom(t time.Time) float64 {
	var a, th float64
	for i, s := range r.secs {
		if !r.start.Add(time.Duration(i) * time.Second).Before(t) {
			a += s.attempted
			th += s.throttled
		}
	}
	if a == 0 {
		return 0
	}
	return 100 * th / a
}

// Run simulates the workload under each design. The table and its GSI
// start warm: they served the workload's base rate before (PrevPeakWCU), as
// a production table that has been running has. isolateAfter is how long
// adaptive capacity takes to give hot keys partitions of their own.
func Run(w Workload, designs []Design, isolateAfter time.Duration) []Result {
	out := make([]Result, len(designs))
	for i, d := range designs {
		out[i] = run(w, d, isolateAfter)
	}
	return out
}

// run simulates the workload under one design.
func run(w Workload, d Design, isolateAfter time.Duration) Result {
	wcu := math.Max(1, math.Ceil(w.ItemKB))
	var base float64
	busiest := Source{}
	for _, s := range w.Sources {
		base += s.Rate
		if s.Rate > busiest.Rate {
			busiest = s
		}
	}
	table := newTable(base*wcu, w.StoredGB, isolateAfter)
	gsi := newTable(base*wcu, w.StoredGB, isolateAfter)
	r := Result{Design: d.Name, start: w.Start}
	var ad *adaptive
	if d.Adapt != nil {
		ad = newAdaptive(*d.Adapt)
	}
	var attempted, throttled, gsiThrottled float64
	for sec := time.Duration(0); sec < w.Duration; sec += time.Second {
		t := w.Start.Add(sec)
		parts := place(w, d, ad, t, w.factor(sec), wcu)
		shares, byGSI, hot, ghot := serve(table, gsi, t, parts)
		r.HottestLoad = math.Max(r.HottestLoad, hot)
		r.HottestGSILoad = math.Max(r.HottestGSILoad, ghot)
		var this second
		for i, p := range parts {
			this.attempted += p.rate
			this.throttled += p.rate * shares[i]
			gsiThrottled += p.rate * byGSI[i]
			if ad != nil {
				ad.observe(p.source, t, p.batch, wcu, shares[i])
			}
		}
		attempted += this.attempted
		throttled += this.throttled
		r.secs = append(r.secs, this)
	}
	r.ThrottledPct = 100 * throttled / attempted
	r.GSIThrottledPct = 100 * gsiThrottled / attempted
	if ad != nil {
		r.Raises, r.Unrecorded = ad.raises, ad.unrecorded
		r.ReadRequests = gsiReads(busiest.Rate*3600, ad.maxGSIShards(busiest.Name))
	} else {
		r.ReadRequests = d.Reads(busiest.Rate * 3600)
	}
	return r
}

// factor is what the workload's rates are multiplied by at elapsed: the
// burst's factor while it lasts, times the profile.
func (w Workload) factor(elapsed time.Duration) float64 {
	f := 1.0
	if w.BurstFactor > 0 && elapsed >= w.BurstAt && elapsed < w.BurstAt+w.BurstLength {
		f = w.BurstFactor
	}
	if w.Profile != nil {
		f *= w.Profile(elapsed)
	}
	return f
}

// part is a share of a source's writes in one second, spread evenly over
// partition keys: all of them under a fixed design, a writer's batch under
// an adaptive one.
type part struct {
	source    string
	rate      float64 // write units a second
	base, gsi []string
	batch     batch // adaptive designs only
}

// place spreads the second at t of every source's events, at factor times
// its rate, over the design's keys.
func place(w Workload, d Design, ad *adaptive, t time.Time, factor, wcu float64) []part {
	var parts []part
	for _, s := range w.Sources {
		if ad == nil {
			b, g := d.Keys(s.Name, t)
			parts = append(parts, part{source: s.Name, rate: s.Rate * factor * wcu, base: b, gsi: g})
			continue
		}
		for _, bt := range ad.batches(s.Name, t, s.Rate*factor) {
			b, g := shardlineKeys(s.Name, t, bt.cur.Shards, bt.cur.GSIShards)
			parts = append(parts, part{source: s.Name, rate: float64(bt.items) * wcu, base: b, gsi: g, batch: bt})
		}
	}
	return parts
}

// serve has the table and its GSI take one second of parts. It returns the
// share of each part's writes throttled, on the table or by the GSI's
// back-pressure, the share throttled by the GSI alone, and the hottest
// partition's load on each.
func serve(table, gsi *Table, t time.Time, parts []part) (shares, byGSI []float64, hot, ghot float64) {
	demand := map[string]float64{}
	for _, p := range parts {
		for _, k := range p.base {
			demand[k] += p.rate / float64(len(p.base))
		}
	}
	th, hot := table.step(t, demand)
	// The base and GSI shards come from independent halves of the hash, so
	// the GSI sees each part's writes that the table took, spread evenly
	// over its GSI keys.
	gdemand := map[string]float64{}
	passed := make([]float64, len(parts))
	for i, p := range parts {
		passed[i] = 1 - mean(th, p.base)
		for _, k := range p.gsi {
			gdemand[k] += p.rate * passed[i] / float64(len(p.gsi))
		}
	}
	gth, ghot := gsi.step(t, gdemand)
	shares, byGSI = make([]float64, len(parts)), make([]float64, len(parts))
	for i, p := range parts {
		gt := mean(gth, p.gsi)
		// A write the GSI cannot take is refused on the table too
		// (back-pressure).
		shares[i] = 1 - passed[i]*(1-gt)
		byGSI[i] = passed[i] * gt
	}
	return shares, byGSI, hot, ghot
}

// mean is the mean of m over keys, 0 for no keys.
func mean(m map[string]float64, keys []string) float64 {
	var sum float64
	for _, k := range keys {
		sum += m[k] / float64(len(keys))
	}
	return sum
}
