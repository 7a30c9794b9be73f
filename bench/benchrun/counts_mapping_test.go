package benchrun

import (
	"strconv"
	"testing"
	"time"
)

func every(from time.Time, n int, step time.Duration, bytes int) []arrival {
	out := make([]arrival, n)
	for i := range out {
		out[i].at = from.Add(time.Duration(i) * step)
		out[i].rec.Change.SequenceNumber = strconv.Itoa(i + 1)
		out[i].bytes = bytes
	}
	return out
}

func sizes(bs []batch) []int {
	var out []int
	for _, b := range bs {
		out = append(out, len(b.recs))
	}
	return out
}

// TestMappingCuts: a batch closes at the batching window, at each tumbling
// window's end, at the record limit and before the payload limit.
func TestMappingCuts(t *testing.T) {
	t0 := time.Date(2026, 11, 22, 11, 0, 0, 0, time.UTC)
	cases := []struct {
		name string
		m    mapping
		recs []arrival
		want []int
	}{
		{"windows", stackMapping, every(t0, 600, 100*time.Millisecond, 1000), []int{100, 50, 100, 50, 100, 50, 100, 50}},
		{"late start", stackMapping, every(t0.Add(3*time.Second), 270, 100*time.Millisecond, 1000), []int{100, 20, 100, 50}},
		{"records", mapping{Window: 10 * time.Second, Tumbling: 15 * time.Second, MaxRecords: 40, MaxBytes: 6 << 20},
			every(t0, 100, 100*time.Millisecond, 1000), []int{40, 40, 20}},
		{"bytes", mapping{Window: 10 * time.Second, Tumbling: 15 * time.Second, MaxRecords: 10000, MaxBytes: 25000},
			every(t0, 100, 100*time.Millisecond, 1000), []int{25, 25, 25, 25}},
	}
	for _, c := range cases {
		got := sizes(c.m.batches("s", c.recs))
		if len(got) != len(c.want) {
			t.Errorf("%s: batches %v, want %v", c.name, got, c.want)
			continue
		}
		for i := range got {
			if got[i] != c.want[i] {
				t.Errorf("%s: batches %v, want %v", c.name, got, c.want)
				break
			}
		}
	}
}

// TestInterleaveKeepsShardOrder: a shard's batches stay in stream order
// even when a late record would start one before its predecessor.
func TestInterleaveKeepsShardOrder(t *testing.T) {
	t0 := time.Date(2026, 11, 22, 11, 0, 0, 0, time.UTC)
	a := every(t0, 30, time.Second, 1)
	a[20].at = t0.Add(5 * time.Second) // arrives out of order, first of its batch
	b := every(t0.Add(500*time.Millisecond), 30, time.Second, 1)
	all := interleave(stackMapping.batches("a", a), stackMapping.batches("b", b))
	last := map[string]int{}
	for _, x := range all {
		for _, r := range x.recs {
			seq, _ := strconv.Atoi(r.Change.SequenceNumber)
			if seq <= last[x.shard] {
				t.Fatalf("shard %s: record %d after %d", x.shard, seq, last[x.shard])
			}
			last[x.shard] = seq
		}
	}
	if last["a"] != 30 || last["b"] != 30 {
		t.Fatalf("records lost: %v", last)
	}
}
