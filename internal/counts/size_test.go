package counts

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/shardline/shardline/internal/item"
)

// TestLevelBytesAtMany sizes the items L1 and L2 write at the cost
// model's "many" workload (10,000 sources at 0.1 events/s, ten types),
// with names of 12 random hex digits: a fold run of 20 s (20,000 tuples,
// one event each) in DefaultBuckets packs, and one source's hour (360
// events) in its L2 item. The write units follow from the sizes as
// DynamoDB bills them (1 KB a unit, item.WriteUnits); the figures are in
// docs/counts.md, "Cost".
func TestLevelBytesAtMany(t *testing.T) {
	rng := rand.New(rand.NewPCG(29, 2))
	names := make([]string, 10000)
	for i := range names {
		names[i] = fmt.Sprintf("device/%012x", rng.Uint64()>>16)
	}
	start := time.Date(2026, 11, 22, 11, 0, 0, 0, time.UTC)
	byBucket := map[int][]Tuple{}
	for range 20000 {
		s := names[rng.IntN(len(names))]
		byBucket[bucketOf(s, DefaultBuckets)] = append(byBucket[bucketOf(s, DefaultBuckets)],
			Tuple{Source: s, Minute: start.Add(time.Duration(rng.IntN(20)) * time.Second).Truncate(time.Minute), Type: fmt.Sprintf("reading.%d", rng.IntN(10)), N: 1})
	}
	wru := 0
	for _, ts := range byBucket {
		parts, err := cutPacks(ts, maxL1Bytes)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range parts {
			wru += item.WriteUnits(len(p) + 80) // the key, run and TTL beside the pack
		}
	}
	l1 := float64(wru) / 20000
	var hour []Tuple
	for range 360 {
		hour = append(hour, Tuple{Minute: start.Add(time.Duration(rng.IntN(3600)) * time.Second).Truncate(time.Minute), Type: fmt.Sprintf("reading.%d", rng.IntN(10)), N: 1})
	}
	p, err := encodePack(hour)
	if err != nil {
		t.Fatal(err)
	}
	l2 := float64(item.WriteUnits(len(p)+60)) / 360
	t.Logf("L1: %d packs, %d WRU for a run of 20,000 quiet events: %.4f an event; L2: a quiet source's hour packs in %d bytes: %.4f WRU an event",
		len(byBucket), wru, l1, len(p), l2)
	if l1 > 0.012 || l2 > 0.003 {
		t.Errorf("L1 %.4f and L2 %.4f WRU an event; docs/counts.md counts on about 0.009 and 0.0028", l1, l2)
	}
}

// TestDayChartReadUnitsAtMany sizes what a day's chart at 1 minute reads
// for one quiet source at the cost model's "many" workload, by DynamoDB's
// rule for a Query (the items' sizes summed, rounded up to 4 KB a read
// unit, half that eventually consistent): the source's bucket's L1 packs
// of 30 minutes (the average since the roll-up's cursor) and of 62 (the
// most), and its 24 L2 hour items. The figures are in docs/counts.md,
// "Which reads must be strongly consistent".
func TestDayChartReadUnitsAtMany(t *testing.T) {
	rng := rand.New(rand.NewPCG(29, 3))
	names := make([]string, 10000)
	for i := range names {
		names[i] = fmt.Sprintf("device/%012x", rng.Uint64()>>16)
	}
	start := time.Date(2026, 11, 22, 11, 0, 0, 0, time.UTC)
	packBytes := func(runs int) int {
		n := 0
		for r := range runs {
			var ts []Tuple
			for range 20000 {
				s := names[rng.IntN(len(names))]
				if bucketOf(s, DefaultBuckets) == 0 {
					ts = append(ts, Tuple{Source: s, Minute: start.Add(time.Duration(r*20+rng.IntN(20)) * time.Second).Truncate(time.Minute),
						Type: fmt.Sprintf("reading.%d", rng.IntN(10)), N: 1})
				}
			}
			parts, err := cutPacks(ts, maxL1Bytes)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range parts {
				n += len(p) + 80 // the key, run and TTL beside the pack
			}
		}
		return n
	}
	half, most := packBytes(90), packBytes(186)
	l2 := 0
	for h := range 24 {
		var hour []Tuple
		for range 360 {
			hour = append(hour, Tuple{Minute: start.Add(time.Duration(h*3600+rng.IntN(3600)) * time.Second).Truncate(time.Minute), Type: fmt.Sprintf("reading.%d", rng.IntN(10)), N: 1})
		}
		p, err := encodePack(hour)
		if err != nil {
			t.Fatal(err)
		}
		l2 += len(p) + 60
	}
	units := func(bytes int) float64 { return float64((bytes + 4095) / 4096) }
	t.Logf("a day's chart at \"many\": L2 %d bytes (%.0f RCU strongly consistent); the bucket's packs of 30 min %d bytes (%.0f RCU, %.1f eventually), of 62 min %d bytes (%.0f RCU); "+
		"with the two cursors' reads: %.0f RCU on average, %.0f at most",
		l2, units(l2), half, units(half), units(half)/2, most, units(most), 2+units(l2)+units(half), 2+units(l2)+units(most))
	if sum := 2 + units(l2) + units(half); sum > 80 {
		t.Errorf("a day's chart reads %.0f RCU on average; docs/counts.md counts on about 55", sum)
	}
}
