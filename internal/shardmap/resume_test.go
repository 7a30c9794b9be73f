package shardmap

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shardline/shardline/pkg/bucketing"
	"github.com/shardline/shardline/testkit/faultproxy"
	"github.com/shardline/shardline/testkit/testddb"
)

// TestScheduleResumesWhereItStopped: a first-of-day setup whose shard
// record cannot be written (the table refuses it, as a deadline cuts it)
// fails after reading the previous day and writing the catalogue entry;
// the next call resumes there: it reads the day's record alone and writes
// the record, without reading the previous day or writing the entry again.
// The day starts from the previous day's peak all the same.
func TestScheduleResumesWhereItStopped(t *testing.T) {
	ctx := context.Background()
	table := testddb.Table(t)
	proxy := faultproxy.For(t, testddb.Endpoint(t))
	src := bucketing.Stream{Space: bucketing.Events, Source: "slow/src"}
	c := &clock{time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)}
	yesterday := registry(t, table, c, 2, 1)
	if _, raised, err := yesterday.Raise(ctx, src, "2026-11-21", 8, 2); err != nil || !raised {
		t.Fatalf("raise yesterday: %v %v", raised, err)
	}
	c.t = time.Date(2026, 11, 22, 0, 0, 30, 0, time.UTC)

	var refuse atomic.Bool
	refuse.Store(true)
	var catalogue, records atomic.Int64
	proxy.SetRule(func(r faultproxy.Request) (*faultproxy.Fault, faultproxy.Hold) {
		if r.Op != "PutItem" {
			return nil, nil
		}
		var in struct{ Item map[string]struct{ S string } }
		_ = json.Unmarshal(r.Body, &in)
		switch pk := in.Item["pk"].S; {
		case strings.HasPrefix(pk, "S#"):
			catalogue.Add(1)
		case strings.HasPrefix(pk, "M#") && refuse.Load():
			return &faultproxy.Fault{Status: 400, Code: "ValidationException"}, nil
		case strings.HasPrefix(pk, "M#"):
			records.Add(1)
		}
		return nil, nil
	})
	r := registry(t, table, c, 2, 1)
	r.Client = testddb.Client(t, proxy.URL)
	r.Config.Carry = true
	if _, err := r.Schedule(ctx, src, "2026-11-22"); err == nil {
		t.Fatal("the record was refused, and Schedule did not fail")
	}
	gets := proxy.Count("GetItem")
	if gets != 3 || catalogue.Load() != 1 {
		t.Fatalf("first call: %d GetItem, %d catalogue entries; want 3 (the day, the previous day's record and hour index) and 1", gets, catalogue.Load())
	}

	refuse.Store(false)
	sched, err := r.Schedule(ctx, src, "2026-11-22")
	if err != nil {
		t.Fatal(err)
	}
	if n := proxy.Count("GetItem") - gets; n != 1 || catalogue.Load() != 1 || records.Load() != 1 {
		t.Fatalf("resumed call: %d GetItem, %d catalogue entries and %d records in all; want 1 (the day), 1, 1", n, catalogue.Load(), records.Load())
	}
	if want := (bucketing.Step{Shards: 8, GSIShards: 2}); len(sched) != 1 || sched[0] != want {
		t.Fatalf("schedule %+v, want %+v from the previous day's peak", sched, want)
	}
}
