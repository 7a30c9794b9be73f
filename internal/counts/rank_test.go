package counts

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/shardline/shardline/pkg/bucketing"
)

// TestTallyByTypeMemory: a 31-day chart by type over a source that put a
// new 200-byte type in every event, 10 types in each of the range's 4,464
// ten-minute counter items (44,640 types), and 5 types in every item. The
// tally the read holds, measured as the live heap after a collection
// (deterministic: nothing else runs in the test), stays under 160 bytes a
// type: the names of the 100 types an answer can list and a hash, a total
// and the buckets of every other. Before, it kept every type's name and a
// map of its buckets: 455 bytes a type here (98 now), and 208 MB for the
// 446,400 types 31 days can hold, against the query function's 256 MB
// (about 44 MB now).
// The answer is as before: the 100 types with most events (ties bytewise),
// the other 44,545 in "other", every bucket adding up.
func TestTallyByTypeMemory(t *testing.T) {
	to := time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)
	r := Request{Source: "s", From: to.Add(-MaxRange), To: to, Interval: time.Hour, Name: "1h", GroupByType: true}
	slices := int(MaxRange / bucketing.CounterSlice)
	const perItem, popular = 10, 5
	want := make([]int64, r.Buckets())
	base := liveHeap()
	tl := newTally(r)
	for i := range slices {
		at := r.From.Add(time.Duration(i) * bucketing.CounterSlice)
		it := map[string]types.AttributeValue{"sk": &types.AttributeValueMemberS{Value: bucketing.CounterSK(at)}}
		put := func(id, typ string, n int) {
			it[TypePrefix+id] = &types.AttributeValueMemberS{Value: typ}
			it[CountPrefix+at.Format("04")+id] = &types.AttributeValueMemberN{Value: fmt.Sprint(n)}
			want[int(at.Sub(r.From)/r.Interval)] += int64(n)
		}
		for j := range perItem {
			g := i*perItem + j
			put(fmt.Sprintf("f%05d", j), fmt.Sprintf("flood.%06d.", g)+strings.Repeat("x", 187), 1+g%7)
		}
		for j := range popular {
			put(fmt.Sprintf("p%05d", j), fmt.Sprintf("popular.%d", j), 10)
		}
		if err := r.add(tl, it); err != nil {
			t.Fatal(err)
		}
	}
	held := liveHeap() - base
	runtime.KeepAlive(tl)
	typesSeen := slices*perItem + popular
	t.Logf("the tally of %d types holds %d bytes, %d a type", typesSeen, held, held/uint64(typesSeen))
	if held/uint64(typesSeen) >= 160 {
		t.Errorf("the tally holds %d bytes for %d types, %d a type; want under 160", held, typesSeen, held/uint64(typesSeen))
	}

	series := r.series(tl.done())
	named, other := series[:len(series)-1], series[len(series)-1].Other
	if len(named) != MaxSeries || other == nil || other.Types != typesSeen-MaxSeries || other.Overflow {
		t.Fatalf("%d series named, other %+v; want %d, then %d types in other", len(named), other, MaxSeries, typesSeen-MaxSeries)
	}
	// The 5 popular types (4,464 items × 10 events) lead; then the flood
	// types of 7 events (g%7 == 6) with the smallest names.
	listed := map[string]bool{}
	for _, s := range named {
		listed[s.Type] = true
	}
	for j := range popular {
		if !listed[fmt.Sprintf("popular.%d", j)] {
			t.Fatalf("popular.%d not listed", j)
		}
	}
	for g, n := 6, 0; n < MaxSeries-popular; g, n = g+7, n+1 {
		if typ := fmt.Sprintf("flood.%06d.", g) + strings.Repeat("x", 187); !listed[typ] {
			t.Fatalf("%.13s… (7 events, among the smallest names of 7) not listed", typ)
		}
	}
	got := make([]int64, r.Buckets())
	for _, s := range series {
		for i, p := range s.Points {
			got[i] += p.Count
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatal("the series do not add up to every event in each bucket")
	}
}

// liveHeap is the bytes of live objects after a full collection.
func liveHeap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
