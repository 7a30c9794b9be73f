package producer

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/shardline/shardline/internal/kpl"
	"github.com/shardline/shardline/testkit/kpltest"
)

// TestAggregator: the hand-written encoder writes what the protobuf
// library writes of the same AggregatedRecord, its size estimate is exact,
// and ingest's decoder reads it back.
func TestAggregator(t *testing.T) {
	for _, n := range []int{1, 2, 300} {
		a := &aggregator{key: "pk-0"}
		var recs []kpltest.Record
		for i := range n {
			d := []byte(fmt.Sprintf(`{"id":"%d","pad":%q}`, i, strings.Repeat("x", i)))
			want := a.sizeWith(d)
			a.add(d)
			recs = append(recs, kpltest.Record{PartitionKey: "pk-0", Data: d})
			if got := len(a.bytes()); got != want {
				t.Fatalf("%d records: sizeWith said %d, bytes are %d", i+1, want, got)
			}
		}
		if got, want := a.bytes(), kpltest.Aggregate(recs); !bytes.Equal(got, want) {
			t.Fatalf("%d records: encoder differs from proto.Marshal", n)
		}
		subs, err := kpl.Deaggregate(a.bytes(), 0)
		if err != nil || len(subs) != n || !bytes.Equal(subs[n-1].Data, recs[n-1].Data) {
			t.Fatalf("%d records: decoded %d, %v", n, len(subs), err)
		}
	}
}
