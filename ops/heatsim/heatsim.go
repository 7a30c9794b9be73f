// Package heatsim simulates how DynamoDB's physical partitions take an
// event-ingestion workload under different key designs: which partitions
// run hot, how many writes are throttled on the table and, through GSI
// back-pressure, by the index, and what a dashboard read costs. The model
// and its sources are in docs/heatsim.md.
//
// Besides designs with fixed counts it runs shardline with adaptive write
// sharding (AdaptiveDesign) as the ingest function runs it: each writer's
// internal/adapt policy raises the counts through a shardmap.Registry, and
// writes are placed by shardmap.InEffect. CompareRamp sets it against fixed
// counts under a source that turns hot.
package heatsim

import (
	"fmt"
	"math"
	"time"

	"github.com/shardline/shardline/pkg/bucketing"
)

// DynamoDB's limits, as documented (docs/heatsim.md).
const (
	PartitionWCU = 1000 // write units a second per partition
	PartitionRCU = 3000 // read units a second per partition
	// NewTableWCU is what a new on-demand table takes at once.
	NewTableWCU = 4000
)

// Design is a key design: over which partition keys a source's writes at
// time t spread, evenly, on the base table and on a GSI (none for designs
// without one).
//
// An even spread is exact in expectation for the hash and random designs,
// and at the rates that matter (hundreds of events a second a key) the
// second-to-second wobble around it is a few percent.
type Design struct {
	Name string
	Keys func(source string, t time.Time) (base, gsi []string)
	// Reads is the number of queries "the newest 100 events of the last 24
	// hours" costs for a source writing perHour events an hour.
	Reads func(perHour float64) int
	// Adapt, when set, makes the design shardline's with counts that rise
	// over the run (adaptive write sharding); Keys and Reads are then not
	// used: the keys follow the counts in effect, and a page queries every
	// GSI shard up to the day's largest count.
	Adapt *Adaptive
}

func numbered(prefix string, n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("%s#%d", prefix, i)
	}
	return keys
}

// Designs are the key designs of the seed articles and shardline's, with
// the given shard counts (the articles' suffixes use articleShards).
func Designs(articleShards, shards, gsiShards int) []Design {
	day := func(t time.Time) string { return t.UTC().Format(bucketing.DayLayout) }
	shardline := func(g int) func(string, time.Time) ([]string, []string) {
		return func(s string, t time.Time) ([]string, []string) { return shardlineKeys(s, t, shards, g) }
	}
	fixed := func(n int) func(float64) int { return func(float64) int { return n } }
	gsiFixed := func(g int) func(float64) int { return func(perHour float64) int { return gsiReads(perHour, g) } }
	return []Design{
		{Name: "single key (EVENTS)", Keys: func(string, time.Time) ([]string, []string) { return []string{"EVENTS"}, nil },
			Reads: fixed(1)},
		{Name: "daily bucket (EVENTS#day)", Keys: func(_ string, t time.Time) ([]string, []string) { return []string{"EVENTS#" + day(t)}, nil },
			Reads: fixed(1)},
		{Name: fmt.Sprintf("random suffix, %d shards", articleShards), Keys: func(_ string, t time.Time) ([]string, []string) {
			return numbered("EVENTS#"+day(t)+"#r", articleShards), nil
		}, Reads: fixed(articleShards)},
		{Name: fmt.Sprintf("calculated suffix, %d shards", articleShards), Keys: func(_ string, t time.Time) ([]string, []string) {
			return numbered("EVENTS#"+day(t)+"#c", articleShards), nil
		}, Reads: fixed(articleShards)},
		{Name: fmt.Sprintf("shardline, %d shards, 1 GSI shard", shards), Keys: shardline(1), Reads: gsiFixed(1)},
		{Name: fmt.Sprintf("shardline, %d shards, %d GSI shards", shards, gsiShards), Keys: shardline(gsiShards), Reads: gsiFixed(gsiShards)},
	}
}

// shardlineKeys are shardline's partition keys for source's events at t
// under n base-table shards and g GSI shards: (source, UTC day, shard) and
// (source, UTC hour, GSI shard).
func shardlineKeys(source string, t time.Time, n, g int) (base, gsi []string) {
	day, hour := t.UTC().Format(bucketing.DayLayout), t.UTC().Format(bucketing.HourLayout)
	base = make([]string, n)
	for i := range base {
		base[i] = bucketing.Stream{Space: bucketing.Events, Source: source}.PK(day, i)
	}
	gsi = make([]string, g)
	for i := range gsi {
		gsi[i] = bucketing.GSIPK(source, hour, i)
	}
	return base, gsi
}

// gsiReads is what "the newest 100 events of the last 24 hours" costs on
// shardline's GSI with g shards: the reader walks hour buckets, newest
// first, until 100 events are found, each bucket one query per GSI shard.
func gsiReads(perHour float64, g int) int {
	return g * int(math.Min(24, math.Ceil(100/math.Max(perHour, 1e-9))))
}

// Source is one producer of the workload.
type Source struct {
	Name string
	Rate float64 // events a second at the base of the workload
}

// Workload is events over time.
type Workload struct {
	Sources  []Source
	Duration time.Duration // simulated, in one-second steps
	Start    time.Time
	ItemKB   float64 // average item size, KB (the GSI copy is priced the same)
	// StoredGB is the data the table (and, the same, its GSI) already
	// holds: under a TTL, about retention × rate × item size. DynamoDB
	// splits partitions at 10 GB, so it sets a floor on their number.
	StoredGB float64
	// Burst multiplies every rate by BurstFactor for BurstLength starting
	// at BurstAt.
	BurstAt, BurstLength time.Duration
	BurstFactor          float64
	// Profile, if set, multiplies every rate by Profile(elapsed) as well:
	// a ramp (RampWorkload). The sources' rates are then their peaks, at
	// a profile of 1; the table is warm for them all the same.
	Profile func(elapsed time.Duration) float64
}

// Zipf spreads total events a second over n sources with exponent s: the
// k-th source writes in proportion to 1/k^s.
func Zipf(n int, s, total float64) []Source {
	var sum float64
	for k := 1; k <= n; k++ {
		sum += 1 / math.Pow(float64(k), s)
	}
	out := make([]Source, n)
	for k := 1; k <= n; k++ {
		out[k-1] = Source{Name: fmt.Sprintf("source-%03d", k), Rate: total / math.Pow(float64(k), s) / sum}
	}
	return out
}

// Table models the physical partitions of a table or an index.
type Table struct {
	// PrevPeakWCU is the peak the table served before: on-demand tables
	// absorb up to twice it at once.
	PrevPeakWCU float64
	// IsolateAfter is how long a partition must be over its ceiling before
	// DynamoDB isolates its hot keys onto partitions of their own; 0 is
	// at once (adaptive capacity's documented behaviour).
	IsolateAfter time.Duration

	isolated map[string]bool   // keys with a partition of their own
	hotSince map[int]time.Time // partition -> when it went over
	part     map[string]int    // key -> shared partition
	parts    int               // shared partitions
	totals   []float64         // write units served, a second each
}

// PartitionGB is the size at which DynamoDB splits a partition.
const PartitionGB = 10

func newTable(prevPeak, storedGB float64, isolateAfter time.Duration) *Table {
	parts := int(math.Max(math.Ceil(2*math.Max(prevPeak, NewTableWCU/2)/PartitionWCU), math.Ceil(storedGB/PartitionGB)))
	return &Table{PrevPeakWCU: prevPeak, IsolateAfter: isolateAfter, isolated: map[string]bool{},
		hotSince: map[int]time.Time{}, part: map[string]int{}, parts: parts}
}

// peakWindow is how far back on-demand's "previous peak" looks: traffic may
// double the peak reached more than this long ago.
const peakWindow = 30 * time.Minute

// limit is what the table takes at once: twice the previous peak.
func (tb *Table) limit() float64 {
	peak := math.Max(tb.PrevPeakWCU, NewTableWCU/2)
	if old := len(tb.totals) - int(peakWindow/time.Second); old > 0 {
		for _, x := range tb.totals[:old] {
			peak = math.Max(peak, x)
		}
	}
	return 2 * peak
}

// step serves one second of demand (write units per key) and returns the
// fraction of each key's writes that were throttled, and the hottest
// partition's load, after isolation, as a fraction of its ceiling.
func (tb *Table) step(t time.Time, demand map[string]float64) (map[string]float64, float64) {
	loads := map[int]float64{}
	keysOf := map[int][]string{}
	var total float64
	for k, w := range demand {
		total += w
		if tb.isolated[k] {
			continue
		}
		p, ok := tb.part[k]
		if !ok {
			p = int(bucketing.Hash("", k) % uint64(tb.parts))
			tb.part[k] = p
		}
		loads[p] += w
		keysOf[p] = append(keysOf[p], k)
	}
	throttled := map[string]float64{}
	for p, w := range loads {
		if w <= PartitionWCU {
			delete(tb.hotSince, p)
			continue
		}
		since, ok := tb.hotSince[p]
		if !ok {
			since = t
			tb.hotSince[p] = t
		}
		if t.Sub(since) >= tb.IsolateAfter && len(keysOf[p]) > 1 {
			// Adaptive capacity: split for heat, putting each hot key on a
			// partition of its own. A single key value cannot be split.
			for _, k := range keysOf[p] {
				tb.isolated[k] = true
			}
			delete(loads, p)
			delete(tb.hotSince, p)
			continue
		}
		for _, k := range keysOf[p] {
			throttled[k] = (w - PartitionWCU) / w
		}
	}
	hottest := 0.0
	for _, w := range loads {
		hottest = math.Max(hottest, w/PartitionWCU)
	}
	// A key on its own partition is limited by that partition's ceiling.
	for k, w := range demand {
		if tb.isolated[k] {
			hottest = math.Max(hottest, w/PartitionWCU)
			if w > PartitionWCU {
				throttled[k] = (w - PartitionWCU) / w
			}
		}
	}
	// On-demand: at most twice the previous peak at once.
	if limit := tb.limit(); total > limit {
		extra := (total - limit) / total
		for k := range demand {
			throttled[k] = 1 - (1-throttled[k])*(1-extra)
		}
		total = limit
	}
	tb.totals = append(tb.totals, total)
	return throttled, hottest
}

// Advice is the shard counts to configure for a source, checked by
// simulation.
type Advice struct {
	Shards, GSIShards int
	Simulated         Result
}

// Advise sizes the shards and GSI shards of a source writing peak events a
// second of itemKB each (gsiKB on the GSI), by the seed articles' formula
// (bucketing.ShardsFor), and simulates ten minutes at that peak with a 20 %
// burst to report the headroom.
func Advise(peak, itemKB, gsiKB float64) Advice {
	a := Advice{Shards: bucketing.ShardsFor(peak, itemKB), GSIShards: bucketing.ShardsFor(peak, gsiKB)}
	w := Workload{Sources: []Source{{Name: "advised", Rate: peak}}, Duration: 10 * time.Minute, ItemKB: math.Max(itemKB, gsiKB),
		Start: time.Date(2026, 11, 22, 11, 55, 0, 0, time.UTC), BurstAt: 5 * time.Minute, BurstLength: time.Minute, BurstFactor: 1.2}
	all := Designs(a.Shards, a.Shards, a.GSIShards)
	a.Simulated = Run(w, all[len(all)-1:], 0)[0]
	return a
}
