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
	"github.com/shardline/shardline/testkit/simtime"
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
// Scaled 60 times smaller than life (traffic, the model's keys, and the
// nominal 1,000 the containers start from: see scaled), on the
// simulation's virtual clock (sim_test.go), with one quarantine shard
// configured; the records received before the raise takes effect stay on
// that one key, and the test waits for them to drain. The keys take the
// nominal figure: that the quarantine is raised is at stake here; that a
// key's ceiling is learned, in the overload and shared-partition
// simulations.
func TestQuarantineFloodIsSpread(t *testing.T) {
	t.Parallel()
	const (
		scale  = 60.0   // traffic, key ceilings and the nominal figure, this many times smaller than life
		keyWCU = 1000.0 // what each key of the model takes, at life size
		rate   = 2000.0 // rejected records a second at life size: 2x one key
		load   = 4 * time.Minute
		giveUp = 30 * time.Minute
	)
	start := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	table := testddb.Table(t)
	endpoint := testddb.Endpoint(t)
	proxy := faultproxy.For(t, endpoint)
	simtime.Run(t, start, func(t *testing.T, clk *simtime.Clock) {
		model := &faultproxy.Partitions{WCU: keyWCU / scale, Keys: []string{schema.PK, schema.GSIPK}, Now: clk.Seen}
		proxy.SetRule(model.Rule())
		cfg := DefaultConfig(table)
		cfg.QuarantineShards = 1
		var logs syncbuf.Buffer
		queues := fleet(3, cfg, clk, proxy.URL, scaled(clk, scale, slog.New(slog.NewJSONHandler(&logs, nil))))
		for _, q := range queues {
			q.reject = true
		}
		flood := &producer{queues: queues, start: start, prefix: "bad-", rate: func(time.Duration) float64 { return rate / scale }}
		drive(t, clk, start, queues, "flood", model, load, giveUp, flood)
		all := flood.all

		var raises []string
		for _, m := range logLines(logs.String(), "shards raised") {
			raises = append(raises, fmt.Sprintf("%v: %v -> %v, effective %v: %v", m["quarantine"], m["shards_from"], m["shards_to"], m["effective"], m["reason"]))
		}
		t.Logf("raises:\n  %s", strings.Join(raises, "\n  "))
		c := clk.Client(endpoint, 0)
		reg := &shardmap.Registry{Client: c, Table: table}
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
		e := &env{table: table, client: c}
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
	})
}
