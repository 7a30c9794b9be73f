package item

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/shardline/shardline/internal/schema"
	"github.com/shardline/shardline/pkg/bucketing"
)

func ptr(n int) *int { return &n }

// TestOriginSubIndex: a quarantined KPL user record's origin keeps its
// sub-index through the item and into JSON, and every combination of
// sub-index and index names its own item, while an origin without a
// sub-index keeps the key it always had (a redelivery after an upgrade
// lands on the same item).
func TestOriginSubIndex(t *testing.T) {
	base := Origin{StreamARN: "arn:aws:kinesis:us-east-1:000000000000:stream/s", ShardID: "shardId-000000000001", SequenceNumber: "4965"}
	origins := []Origin{base, {RequestID: "req-1"}, {RequestID: "req-1", Index: ptr(3)}}
	for _, sub := range []*int{nil, ptr(0), ptr(3), ptr(30)} {
		for _, idx := range []*int{nil, ptr(0), ptr(3)} {
			o := base
			o.SubIndex, o.Index = sub, idx
			origins = append(origins, o)
		}
	}
	at := time.Date(2026, 11, 22, 11, 0, 0, 0, time.UTC)
	sortKeys := map[string]Origin{}
	for _, o := range origins {
		it := Quarantine(Rejected{ReceivedAt: at, Reason: "kpl: test", Raw: []byte("x"), Origin: o}, bucketing.Step{Shards: 4}, time.Hour)
		if prev, dup := sortKeys[it.SK]; dup && !equal(prev, o) {
			t.Fatalf("origins %+v and %+v share the item %s", prev, o, it.SK)
		}
		sortKeys[it.SK] = o
		if got := OriginOf(it.Attrs); !equal(got, o) {
			t.Fatalf("origin %+v read back as %+v", o, got)
		}
		if _, ok := it.Attrs[schema.Origin]; !ok {
			t.Fatal("no origin attribute")
		}
	}
	if got := base.key(); got != "k:shardId-000000000001:4965:arn:aws:kinesis:us-east-1:000000000000:stream/s" {
		t.Fatalf("the key of an origin without sub-index changed: %q", got)
	}
	withIndex := base
	withIndex.Index = ptr(3)
	if got := withIndex.key(); got != base.key()+"#3" {
		t.Fatalf("the key of an origin with an index changed: %q", got)
	}
	o := base
	o.SubIndex, o.Index = ptr(2), ptr(5)
	b, _ := json.Marshal(o)
	if want := `{"stream_arn":"arn:aws:kinesis:us-east-1:000000000000:stream/s","shard_id":"shardId-000000000001","sequence_number":"4965","sub_index":2,"index":5}`; string(b) != want {
		t.Fatalf("JSON %s, want %s", b, want)
	}
}

func equal(a, b Origin) bool {
	eq := func(x, y *int) bool { return (x == nil) == (y == nil) && (x == nil || *x == *y) }
	return a.StreamARN == b.StreamARN && a.ShardID == b.ShardID && a.SequenceNumber == b.SequenceNumber &&
		a.RequestID == b.RequestID && eq(a.SubIndex, b.SubIndex) && eq(a.Index, b.Index)
}
