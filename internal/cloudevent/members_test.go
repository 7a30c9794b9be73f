package cloudevent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"
)

// wideEvent is an event of at most size bytes made of many short extension
// attributes, the shape that made the duplicate check quadratic (29,166
// members in 350 KB). It returns the event and its member count.
func wideEvent(size int) ([]byte, int) {
	var b strings.Builder
	b.WriteString(`{"id":"1","source":"s","type":"t"`)
	n := 0
	for b.Len() < size-16 {
		fmt.Fprintf(&b, `,"x%d":1`, n)
		n++
	}
	b.WriteByte('}')
	return []byte(b.String()), n + 3
}

// TestDuplicateCheckIsNotQuadratic counts the name comparisons the
// duplicate check makes on a 350 KB event with ~29,000 members: at most a
// few n·log2(n), where comparing every pair would take n²/2 (~425 million).
func TestDuplicateCheckIsNotQuadratic(t *testing.T) {
	raw, n := wideEvent(MaxBytesLimit)
	ms, ok := members(raw, nil)
	if !ok || len(ms) != n {
		t.Fatalf("members: %d, %v; want %d", len(ms), ok, n)
	}
	var calls int
	count := func(a, b []byte) int { calls++; return bytes.Compare(a, b) }
	if i := duplicateAt(ms, count); i != -1 {
		t.Fatalf("duplicateAt found a duplicate at %d in distinct names", i)
	}
	bound := int(3 * float64(n) * math.Log2(float64(n)))
	if calls > bound {
		t.Fatalf("%d comparisons for %d members; want at most 3·n·log2(n) = %d", calls, n, bound)
	}
	t.Logf("%d members: %d comparisons (bound %d, every pair %d)", n, calls, bound, n*(n-1)/2)

	// The same members with one name repeated near the end: found, and
	// at the repeat.
	dupRaw := append(bytes.TrimSuffix(raw, []byte("}")), []byte(`,"x7":2}`)...)
	ms, _ = members(dupRaw, nil)
	calls = 0
	if i := duplicateAt(ms, count); i != len(ms)-1 || calls > bound {
		t.Fatalf("duplicateAt = %d after %d comparisons; want %d within %d", i, calls, len(ms)-1, bound)
	}
}

// TestDuplicateAtReportsTheFirstRepeat: whatever the object's size, the
// member reported is the first one whose name an earlier member has, as a
// reader going through the object in order would find it.
func TestDuplicateAtReportsTheFirstRepeat(t *testing.T) {
	for _, extra := range []int{0, 40} { // a small object, and one over the small-object cut-off
		var names []string
		for i := range extra {
			names = append(names, fmt.Sprintf("e%d", i))
		}
		names = append(names, "b", "a", "c", "a", "b", "c")
		ms := make([]member, len(names))
		for i, n := range names {
			ms[i].name = []byte(n)
		}
		if got, want := duplicateAt(ms, bytes.Compare), extra+3; got != want {
			t.Errorf("with %d other members: duplicate at %d, want %d (the second a)", extra, got, want)
		}
	}
}

// BenchmarkWideEvent parses the 350 KB, 29,000-member event, against
// encoding/json decoding it in the same run.
func BenchmarkWideEvent(b *testing.B) {
	raw, _ := wideEvent(MaxBytesLimit)
	wide := Limits{MaxBytes: MaxBytesLimit, Retention: DefaultRetention}
	b.Run("cloudevent.Parse", func(b *testing.B) {
		b.SetBytes(int64(len(raw)))
		for b.Loop() {
			if _, err := Parse(raw, now, now, wide); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding/json", func(b *testing.B) {
		b.SetBytes(int64(len(raw)))
		for b.Loop() {
			var m map[string]json.RawMessage
			if err := json.Unmarshal(raw, &m); err != nil {
				b.Fatal(err)
			}
		}
	})
}
