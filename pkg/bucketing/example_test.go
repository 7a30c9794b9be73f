package bucketing_test

import (
	"fmt"
	"time"

	"github.com/shardline/shardline/pkg/bucketing"
)

// The keys of one event: its source, id and time decide them, so a retry
// of the same event lands on the same item. (The output pins the hash: a
// change to it would move every stored event.)
func Example() {
	source, id := "auth#1 (eu/west)", "7f3a"
	at := time.Date(2026, 11, 22, 11, 30, 5, 250_000_000, time.UTC)

	h := bucketing.Hash(source, id)
	shards, gsiShards := 4, 1
	events := bucketing.Stream{Space: bucketing.Events, Source: source}
	fmt.Println("pk: ", events.PK(bucketing.Day(at), bucketing.Shard(h, shards)))
	fmt.Println("sk: ", bucketing.SortKey(at, id))
	fmt.Println("gpk:", bucketing.GSIPK(source, bucketing.GSIBucket(at, false), bucketing.GSIShard(h, gsiShards)))
	// Output:
	// pk:  E#auth%231 (eu/west)#2026-11-22#3
	// sk:  2026-11-22T11:30:05.250000000Z#7f3a
	// gpk: G#auth%231 (eu/west)#2026-11-22T11#0
}

// How many shards a source needs: at 70 % of a partition key's 1,000 write
// units a second, as `shardline advise` plans.
func ExampleShardsFor() {
	for _, peak := range []float64{500, 5_000, 50_000} {
		fmt.Printf("%6.0f events/s of 1 KB: %d shards\n", peak, bucketing.ShardsFor(peak, 1))
	}
	// Output:
	//    500 events/s of 1 KB: 1 shards
	//   5000 events/s of 1 KB: 8 shards
	//  50000 events/s of 1 KB: 72 shards
}

// A sort key reads back into the event's time and id.
func ExampleParseSortKey() {
	at, id, err := bucketing.ParseSortKey("2026-11-22T11:30:05.250000000Z#order#42")
	fmt.Println(at.Format(time.RFC3339Nano), id, err)
	// Output: 2026-11-22T11:30:05.25Z order#42 <nil>
}

// The counter item an event counts in: its source's partition, and the ten
// minutes it falls in.
func ExampleCounterSK() {
	at := time.Date(2026, 11, 22, 11, 37, 0, 0, time.UTC)
	fmt.Println(bucketing.CounterPK("auth"), bucketing.CounterSK(at))
	// Output: C#auth 2026-11-22T11:30
}
