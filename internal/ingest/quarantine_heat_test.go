package ingest

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/shardline/shardline/internal/schema"
	"github.com/shardline/shardline/internal/shardmap"
	"github.com/shardline/shardline/local/syncbuf"
	"github.com/shardline/shardline/pkg/bucketing"
	"github.com/shardline/shardline/testkit/faultproxy"
	"github.com/shardline/shardline/testkit/testddb"
)

// TestQuarantineFloodIsSpread: a producer all of whose records are
// rejected, twice what the quarantine's keys take. The quarantine's
// schedule is raised as a source's is, once, to what the flood needs, and
// from QuarantineLead after the raise (a rejected record is placed by when
// it was received, never ahead of now, so the raise need not wait out
// Lead); every record is quarantined exactly once, and the records
// received after the step lie on its keys.
//
// Compressed as the overload test is (overload_test.go), with one
// quarantine shard configured so that twice its ceiling stays a load this
// machine carries; the records received before the raise takes effect stay
// on that one key, and the test waits for them to drain.
func TestQuarantineFloodIsSpread(t *testing.T) {
	t.Parallel() // a simulation: bound to its clock, not the CPU (see simClock)
	const (
		scale  = 15.0 // key ceilings, this many times smaller than life
		speed  = 15.0 // simulated seconds per wall-clock second
		keyWCU = 250.0
		rate   = 500.0           // rejected records a second at life size: 2x one key
		load   = 4 * time.Minute // the raise takes effect after about 3
		giveUp = 30 * time.Minute
		batch  = 100
		invoke = 500 * time.Millisecond
	)
	start := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	table := testddb.Table(t)
	endpoint := testddb.Endpoint(t)
	proxy := faultproxy.For(t, endpoint)
	clk := &simClock{start: start, real: time.Now(), speed: speed}
	model := &faultproxy.Partitions{WCU: keyWCU / scale, Keys: []string{schema.PK, schema.GSIPK}, Now: clk.now}
	proxy.SetRule(model.Rule())

	cfg := DefaultConfig(table)
	cfg.QuarantineShards = 1
	var logs syncbuf.Buffer
	queues := fleet(t, 3, cfg, proxy.URL, clk, keyWCU/scale, slog.New(slog.NewJSONHandler(&logs, nil)))
	for _, q := range queues {
		q.reject = true
	}

	var all []rampEvent
	var due float64
	var last time.Duration
	for {
		now := clk.now().Sub(start)
		waiting := 0
		for _, q := range queues {
			waiting += len(q.records)
		}
		if now >= giveUp {
			t.Fatalf("the backlog has not drained after %v: %d records waiting", giveUp, waiting)
		}
		if now < load {
			due += (rate / scale) * (now - last).Seconds()
			k := int(due)
			due -= float64(k)
			for i := range k {
				at := start.Add(last + (now-last)*time.Duration(i)/time.Duration(k))
				e := rampEvent{id: fmt.Sprintf("bad-%06d", len(all)), at: at.Truncate(time.Millisecond)}
				q := queues[len(all)%len(queues)]
				q.records = append(q.records, e)
				all = append(all, e)
			}
			last = now
		} else if waiting == 0 {
			break
		}
		deliverAll(t, queues, "flood", batch, invoke)
		time.Sleep(20 * time.Millisecond)
	}

	var raises []string
	for _, line := range strings.Split(logs.String(), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) == nil && m["msg"] == "shards raised" {
			raises = append(raises, fmt.Sprintf("%v: %v -> %v, effective %v: %v", m["quarantine"], m["shards_from"], m["shards_to"], m["effective"], m["reason"]))
		}
	}
	t.Logf("raises:\n  %s", strings.Join(raises, "\n  "))
	reg := &shardmap.Registry{Client: testddb.Client(t, endpoint), Table: table}
	sched, found, err := reg.Lookup(context.Background(), bucketing.Stream{Space: bucketing.Quarantine}, bucketing.Day(start))
	if err != nil || !found {
		t.Fatalf("the quarantine's schedule: %v %v", found, err)
	}
	t.Logf("schedule: %+v; %d records, %d writes judged, %d throttled", sched, len(all), model.Seen.Load(), model.Throttled.Load())
	if model.Throttled.Load() == 0 {
		t.Fatal("nothing was throttled: the model did not bite")
	}
	// Raised once, to what the flood needs at the ceiling (2 keys), or at
	// most twice that.
	if len(sched) != 2 {
		t.Fatalf("%d steps, want the first and one raise", len(sched))
	}
	if n := sched[1].Shards; n < 2 || n > 4 {
		t.Errorf("raised to %d quarantine shards, want 2 to 4", n)
	}
	if sched[1].GSIShards != sched[0].GSIShards {
		t.Errorf("the quarantine's GSI count moved %d -> %d; it has no GSI copy", sched[0].GSIShards, sched[1].GSIShards)
	}

	// Every record quarantined once; the ones received from the step on
	// spread over its keys.
	from := start.Truncate(24 * time.Hour).Add(time.Duration(sched[1].From) * time.Minute)
	e := &env{table: table, client: testddb.Client(t, endpoint)}
	got := map[string]int{}
	keys := map[string]int{}
	for _, it := range e.itemsIn(t, "Q#") {
		var raw struct{ ID string }
		if b, ok := it[schema.Raw].(*types.AttributeValueMemberB); !ok || json.Unmarshal(b.Value, &raw) != nil {
			t.Fatalf("quarantined item %s without its record", s(it, schema.SK))
		}
		got[raw.ID]++
		received, _, err := bucketing.ParseSortKey(s(it, schema.SK))
		if err != nil {
			t.Fatal(err)
		}
		if !received.Before(from) {
			keys[s(it, schema.PK)]++
		}
	}
	if len(got) != len(all) {
		t.Errorf("%d distinct records quarantined, want %d", len(got), len(all))
	}
	for id, n := range got {
		if n != 1 {
			t.Errorf("record %s quarantined %d times", id, n)
		}
	}
	t.Logf("records received from %s on, by key: %v", from.Format(time.TimeOnly), keys)
	if len(keys) != sched[1].Shards {
		t.Errorf("the records received after the raise lie on %d keys, want the step's %d", len(keys), sched[1].Shards)
	}
}
