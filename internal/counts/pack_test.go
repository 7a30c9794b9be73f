package counts

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"sort"
	"testing"
	"time"
)

// TestPackRoundTrip: random tuples (repeats add up, hostile names, minutes
// over a month, counts up to 2^40) come back from a pack as their sums.
func TestPackRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	base := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	names := []string{"", "a", "ab", "a#b", "a\x00b", "\xff\xfe", "device/0001", "device/0002", "\u2028"}
	for round := range 20 {
		var ts []Tuple
		want := map[tupleKey]int64{}
		for range rng.IntN(500) {
			x := Tuple{Source: names[rng.IntN(len(names))] + fmt.Sprint(rng.IntN(30)), Minute: base.Add(time.Duration(rng.IntN(31*1440)) * time.Minute),
				Type: names[rng.IntN(len(names))], N: 1 + rng.Int64N(1<<40)}
			ts = append(ts, x)
			want[tupleKey{x.Source, x.Minute.Unix() / 60, x.Type}] += x.N
		}
		p, err := encodePack(ts)
		if err != nil {
			t.Fatal(err)
		}
		got, err := decodePack(p)
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		sums := map[tupleKey]int64{}
		for _, x := range got {
			sums[tupleKey{x.Source, x.Minute.Unix() / 60, x.Type}] += x.N
		}
		if len(got) != len(want) || !reflect.DeepEqual(sums, want) {
			t.Fatalf("round %d: %d tuples back, want %d sums", round, len(got), len(want))
		}
		if !sort.SliceIsSorted(got, func(i, j int) bool {
			return tupleKey{got[i].Source, got[i].Minute.Unix(), got[i].Type}.less(tupleKey{got[j].Source, got[j].Minute.Unix(), got[j].Type})
		}) {
			t.Fatalf("round %d: tuples not sorted", round)
		}
	}
}

// TestPackRefusesDamage: every truncation of a pack, and a pack of another
// version, is an error, never a wrong count.
func TestPackRefusesDamage(t *testing.T) {
	at := time.Date(2026, 11, 22, 11, 7, 0, 0, time.UTC)
	p, err := encodePack([]Tuple{{"a", at, "t", 3}, {"b", at.Add(time.Minute), "u", 4}})
	if err != nil {
		t.Fatal(err)
	}
	for n := range len(p) {
		if _, err := decodePack(p[:n]); err == nil {
			t.Errorf("a pack cut to %d of %d bytes was read", n, len(p))
		}
	}
	other := append([]byte{packVersion + 1}, p[1:]...)
	if _, err := decodePack(other); err == nil {
		t.Error("a pack of another version was read")
	}
}
