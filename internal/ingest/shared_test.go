package ingest

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/shardline/shardline/internal/schema"
	"github.com/shardline/shardline/internal/shardmap"
	"github.com/shardline/shardline/local/syncbuf"
	"github.com/shardline/shardline/pkg/bucketing"
	"github.com/shardline/shardline/testkit/faultproxy"
	"github.com/shardline/shardline/testkit/simtime"
	"github.com/shardline/shardline/testkit/testddb"
)

// TestHotSourcesSharingAPartitionAreSpread: two sources whose GSI keys
// are on one partition, as keys are until DynamoDB splits it, at life size
// and as deployed. The partition takes 250 WCU/s; each source asks 200 of
// it (6 KB events of 6 write units, 33 a second), so each gets about half of what it asks,
// though either alone would fit, and neither is over DynamoDB's nominal
// 1,000. Four containers, fed by four Kinesis shards, write both.
//
// What must hold: each source is raised once, its GSI sized to what its
// key was measured to take (the 125 or so it got: 2 keys carry 200 at that,
// and the raise is within twice that), its table left alone; the backlog
// drains within 90 s of the load's end; under a tenth of the attempts in
// the last minute of load are throttled; every event is stored once.
func TestHotSourcesSharingAPartitionAreSpread(t *testing.T) {
	t.Parallel()
	const (
		keyWCU = 250.0 // what each partition of the model takes
		asks   = 200.0 // write units a second each source asks of its GSI key
		pad    = 5400  // 6 write units an event
		load   = 3 * time.Minute
		giveUp = 30 * time.Minute
	)
	sources := []string{"team-a/orders", "team-b/clicks"}
	start := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	shared := map[string]bool{}
	for _, src := range sources {
		shared[schema.GSIPK+"="+bucketing.GSIPK(src, bucketing.GSIBucket(start, false), 0)] = true
	}
	table := testddb.Table(t)
	endpoint := testddb.Endpoint(t)
	proxy := faultproxy.For(t, endpoint)
	simtime.Run(t, start, func(t *testing.T, clk *simtime.Clock) {
		model := &faultproxy.Partitions{WCU: keyWCU, Keys: []string{schema.PK, schema.GSIPK}, Now: clk.Seen,
			Partition: func(key string) string {
				if shared[key] {
					return schema.GSIPK + "=G#shared"
				}
				return ""
			}}
		proxy.SetRule(model.Rule())
		var logs syncbuf.Buffer
		queues := fleet(4, DefaultConfig(table), clk, proxy.URL, func() Options {
			return Options{Now: clk.Now, Logger: slog.New(slog.NewJSONHandler(&logs, nil))}
		})
		for _, q := range queues {
			q.pad = pad
		}
		var traffic []*producer
		for i, src := range sources {
			traffic = append(traffic, &producer{queues: queues, start: start, source: src, prefix: fmt.Sprintf("s%d-", i),
				rate: func(time.Duration) float64 { return asks / 6 }})
		}
		samples, _ := drive(t, clk, start, queues, "", model, load, giveUp, traffic...)
		end := clk.Now()

		var lines []string
		for _, m := range logLines(logs.String(), "shards raised") {
			lines = append(lines, fmt.Sprintf("%v: %v/%v -> %v/%v: %v", m["event_source"], m["shards_from"], m["gsi_shards_from"], m["shards_to"], m["gsi_shards_to"], m["reason"]))
		}
		t.Logf("raises:\n  %s", strings.Join(lines, "\n  "))
		c := clk.Client(endpoint, 0)
		reg := &shardmap.Registry{Client: c, Table: table}
		for i, src := range sources {
			sched, _, err := reg.Lookup(context.Background(), bucketing.Stream{Space: bucketing.Events, Source: src}, bucketing.Day(start))
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: schedule %+v", src, sched)
			if len(sched) != 2 {
				t.Errorf("%s: %d raises, want one", src, len(sched)-1)
				continue
			}
			if g := sched.Last().GSIShards; g < 2 || g > 4 {
				t.Errorf("%s: GSI shards end at %d, want 2 to 4: it got about %.0f of the partition's %.0f, and asks %.0f", src, g, keyWCU/2, keyWCU, asks)
			}
			if sched.Last().Shards != sched[0].Shards {
				t.Errorf("%s: table shards raised %d -> %d, though its keys carried it", src, sched[0].Shards, sched.Last().Shards)
			}
			if n := countEvents(t, c, table, src, bucketing.Day(start), sched.MaxShards()); n != len(traffic[i].all) {
				t.Errorf("%s: %d event items in the table, want %d", src, n, len(traffic[i].all))
			}
		}
		var lastSeen, lastHeld int64
		for _, s := range samples {
			if s.at >= load-time.Minute && s.at < load {
				lastSeen += s.seen
				lastHeld += s.held
			}
		}
		drained := end.Sub(start) - load
		t.Logf("drained %v after the load; %d of %d attempts throttled; in the load's last minute %d of %d; throttled/judged per minute:%s",
			drained.Round(time.Second), model.Throttled.Load(), model.Seen.Load(), lastHeld, lastSeen, timeline(samples))
		if model.Throttled.Load() == 0 {
			t.Fatal("nothing was throttled: the model did not bite")
		}
		if drained > 90*time.Second {
			t.Errorf("the backlog drained %v after the load ended, want within 90s", drained.Round(time.Second))
		}
		if lastSeen == 0 || float64(lastHeld) >= 0.10*float64(lastSeen) {
			t.Errorf("in the load's last minute: %d of %d attempts throttled, want under 10%%", lastHeld, lastSeen)
		}
	})
}
