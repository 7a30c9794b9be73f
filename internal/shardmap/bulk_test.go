package shardmap

import (
	"context"
	"testing"
	"time"

	"github.com/shardline/shardline/pkg/bucketing"
	"github.com/shardline/shardline/testkit/faultproxy"
	"github.com/shardline/shardline/testkit/testddb"
)

// TestReadAheadIsWhatScheduleReads: ReadAhead reads three new streams' days
// in two BatchGetItems (the records strongly consistent; the event
// streams' previous days, record and hour index, eventually), and
// ScheduleRead then reads none of it again: a source whose previous day
// was raised starts from its peak, as Schedule would start it. A record
// another container creates between the read ahead and ScheduleRead makes
// the write lose its race, and ScheduleRead reads the record again (one
// GetItem) and takes it, as Schedule does. Fresh in the cache, the streams
// cost no read ahead.
func TestReadAheadIsWhatScheduleReads(t *testing.T) {
	ctx := context.Background()
	table := testddb.Table(t)
	proxy := faultproxy.For(t, testddb.Endpoint(t))
	raised := bucketing.Stream{Space: bucketing.Events, Source: "raised/src"}
	raced := bucketing.Stream{Space: bucketing.Events, Source: "raced/src"}
	quarantine := bucketing.Stream{Space: bucketing.Quarantine}
	c := &clock{time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)}
	if _, ok, err := registry(t, table, c, 2, 1).Raise(ctx, raised, "2026-11-21", 8, 2); err != nil || !ok {
		t.Fatalf("raise yesterday: %v %v", ok, err)
	}
	c.t = time.Date(2026, 11, 22, 0, 0, 30, 0, time.UTC)
	const day = "2026-11-22"

	r := registry(t, table, c, 2, 1)
	r.Client = testddb.Client(t, proxy.URL)
	r.Config.Carry = true
	wants := []Want{{raised, day}, {raced, day}, {quarantine, day}}
	reads, err := r.ReadAhead(ctx, wants)
	if err != nil {
		t.Fatal(err)
	}
	if b, g := proxy.Count("BatchGetItem"), proxy.Count("GetItem"); b != 2 || g != 0 {
		t.Fatalf("read ahead: %d BatchGetItem, %d GetItem; want 2 and 0", b, g)
	}

	sched, err := r.ScheduleRead(ctx, raised, day, reads[0])
	if err != nil {
		t.Fatal(err)
	}
	if want := (bucketing.Step{Shards: 8, GSIShards: 2}); len(sched) != 1 || sched[0] != want {
		t.Fatalf("%s: schedule %+v, want %+v from the previous day's peak", raised.Source, sched, want)
	}
	if _, err := r.ScheduleRead(ctx, quarantine, day, reads[2]); err != nil {
		t.Fatal(err)
	}
	if g := proxy.Count("GetItem"); g != 0 {
		t.Fatalf("%d GetItem after the read ahead, want none", g)
	}

	other := registry(t, table, c, 4, 1) // another container, first to create the day
	if _, err := other.Schedule(ctx, raced, day); err != nil {
		t.Fatal(err)
	}
	sched, err = r.ScheduleRead(ctx, raced, day, reads[1])
	if err != nil {
		t.Fatal(err)
	}
	if g := proxy.Count("GetItem"); g != 1 || len(sched) != 1 || sched[0].Shards != 4 {
		t.Fatalf("%s, created by another container meanwhile: %d GetItem, schedule %+v; want 1 (the record again) and the other's 4 shards", raced.Source, g, sched)
	}

	if _, err := r.ReadAhead(ctx, wants); err != nil || proxy.Count("BatchGetItem") != 2 {
		t.Fatalf("read ahead again, fresh in the cache: %d BatchGetItem in all, %v; want none more", proxy.Count("BatchGetItem"), err)
	}
}
