package ingest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/shardline/shardline/internal/adapt"
	"github.com/shardline/shardline/internal/emf"
	"github.com/shardline/shardline/internal/item"
	"github.com/shardline/shardline/internal/schema"
	"github.com/shardline/shardline/internal/shardmap"
	"github.com/shardline/shardline/local/syncbuf"
	"github.com/shardline/shardline/pkg/bucketing"
	"github.com/shardline/shardline/testkit/faultproxy"
	"github.com/shardline/shardline/testkit/simtime"
	"github.com/shardline/shardline/testkit/testddb"
)

// TestThrottledSourceIsRaised: a source twice over its one GSI key on the
// partition model gets a raise recorded in its shard record, logged and
// counted; another source written by the same warm container is left
// alone, and nothing is lost. Scaled 50 times smaller than life: keys of
// 250 WCU/s, the container starting from the nominal 1,000 (see scaled),
// on the simulation's virtual clock (sim_test.go).
func TestThrottledSourceIsRaised(t *testing.T) {
	t.Parallel()
	const scale = 50.0
	endpoint := testddb.Endpoint(t)
	table := testddb.Table(t)
	proxy := faultproxy.For(t, endpoint)
	start := fixtureNow.Add(-2 * time.Minute)
	simtime.Run(t, start, func(t *testing.T, clk *simtime.Clock) {
		model := &faultproxy.Partitions{WCU: 250 / scale, Keys: []string{schema.PK, schema.GSIPK}, Now: clk.Seen}
		proxy.SetRule(model.Rule())
		var logs, metrics bytes.Buffer
		var mu sync.Mutex
		o := scaled(clk, scale, slog.New(slog.NewJSONHandler(&lockedWriter{&mu, &logs}, &slog.HandlerOptions{Level: slog.LevelDebug})))()
		o.Metrics = emf.New(&lockedWriter{&mu, &metrics}, nil)
		h := New(DefaultConfig(table), clk.Client(proxy.URL, lag), o)
		hot, calm := &shardQueue{name: "1", h: h}, &shardQueue{name: "2", h: h}
		hotTraffic := &producer{queues: []*shardQueue{hot}, start: start, prefix: "h-",
			rate: func(time.Duration) float64 { return 2 * 250 / scale }} // twice the GSI key
		calmTraffic := &producer{queues: []*shardQueue{calm}, start: start, prefix: "c-",
			rate: func(time.Duration) float64 { return 1 }}
		stopHot, stopCalm := poll(t, []*shardQueue{hot}, "hot", 500, time.Minute), poll(t, []*shardQueue{calm}, "calm", 500, time.Minute)
		for {
			now := clk.Now().Sub(start)
			n, _ := waiting([]*shardQueue{hot, calm})
			if now > 10*time.Minute {
				stopHot()
				stopCalm()
				t.Fatalf("not drained after 10 minutes: %d records waiting", n)
			}
			if now < time.Minute {
				hotTraffic.until(now)
				calmTraffic.until(now)
			} else if n == 0 {
				break
			}
			time.Sleep(time.Second)
		}
		stopHot()
		stopCalm()
		if model.Throttled.Load() == 0 {
			t.Fatal("the model throttled nothing")
		}
		c := clk.Client(endpoint, 0)
		reg := &shardmap.Registry{Client: c, Table: table}
		day := bucketing.Day(start)
		hotSched, _, err := reg.Lookup(context.Background(), bucketing.Stream{Space: bucketing.Events, Source: "hot"}, day)
		if err != nil {
			t.Fatal(err)
		}
		if len(hotSched) != 2 || hotSched.Last().GSIShards < 2 || hotSched.Last().Shards != DefaultShards {
			t.Fatalf("hot source's schedule %+v: want one raise, of its GSI shards only; log:\n%s", hotSched, logs.String())
		}
		if hotSched.Last().From < start.Hour()*60+start.Minute()+int(shardmap.Lead/time.Minute) {
			t.Fatalf("raise %+v starts before the lead", hotSched.Last())
		}
		calmSched, _, err := reg.Lookup(context.Background(), bucketing.Stream{Space: bucketing.Events, Source: "calm"}, day)
		if err != nil || len(calmSched) != 1 {
			t.Fatalf("calm source's schedule %+v %v: raised", calmSched, err)
		}
		var raised map[string]any
		if lines := logLines(logs.String(), "shards raised"); len(lines) > 0 {
			raised = lines[len(lines)-1]
		}
		// The source comes on at twice its GSI key: the rate rule may see it
		// rise before it throttles, or the throttle rule after.
		if reason := fmt.Sprint(raised["reason"]); raised == nil || raised["event_source"] != "hot" ||
			!strings.HasPrefix(reason, "throttled") && !strings.HasPrefix(reason, "rate") {
			t.Fatalf("raise log line %v", raised)
		}
		if !strings.Contains(metrics.String(), `"ShardRaises":1`) {
			t.Fatalf("no ShardRaises metric in %s", metrics.String())
		}
		want := map[[2]string]bool{}
		for _, e := range hotTraffic.all {
			want[[2]string{"hot", e.id}] = true
		}
		for _, e := range calmTraffic.all {
			want[[2]string{"calm", e.id}] = true
		}
		e := &env{table: table, client: c}
		e.assertExactlyOnce(t, want, 0)
	})
}

// lockedWriter serialises writes to w: the handler logs from several
// goroutines.
type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// TestCoarseClocksAreNotHeat: a source whose events are stamped to the
// minute, as many devices and loggers stamp them, at half of what its one
// GSI key takes, through two containers, on keys the partition model never
// throttles at that rate. How far a writer has got through the source is
// read from the records' arrival times, not from the events' own: a minute
// of events with one time is not a writer sixteen times behind. Nothing is
// raised, and no writer reports the source throttled. A second source,
// at a thirty-second of its GSI key, is not worth a report at all (under
// adapt.ReportShare): no writer writes one, where each wrote one every 5 s
// when a coarse clock read as heat. Scaled 20 times
// smaller than life, the policy and pacer with it (scaled).
func TestCoarseClocksAreNotHeat(t *testing.T) {
	t.Parallel()
	const scale = 20.0
	endpoint := testddb.Endpoint(t)
	table := testddb.Table(t)
	proxy := faultproxy.For(t, endpoint)
	start := fixtureNow.Add(-2 * time.Minute).Truncate(time.Minute).Add(20 * time.Second)
	simtime.Run(t, start, func(t *testing.T, clk *simtime.Clock) {
		keyWCU := bucketing.PartitionWCU / scale
		model := &faultproxy.Partitions{WCU: keyWCU, Keys: []string{schema.PK, schema.GSIPK}, Now: clk.Seen}
		proxy.SetRule(model.Rule())
		var logs syncbuf.Buffer
		queues := fleet(2, DefaultConfig(table), clk, proxy.URL,
			scaled(clk, scale, slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))))
		for _, q := range queues {
			q.coarse = time.Minute
		}
		traffic := &producer{queues: queues, start: start, source: "meters",
			rate: func(time.Duration) float64 { return keyWCU / 2 }} // half the GSI key, one write unit an event
		quiet := &producer{queues: queues, start: start, source: "ticks", prefix: "t-",
			rate: func(time.Duration) float64 { return keyWCU / 32 }}
		drive(t, clk, start, queues, "", model, 3*time.Minute, 10*time.Minute, traffic, quiet)

		var reports []map[string]any
		for _, m := range logLines(logs.String(), "adaptive sharding: demand reported") {
			switch {
			case m["event_source"] == "ticks":
				t.Errorf("a writer reported the quiet source: %v", m)
			case m["throttled"] != false:
				t.Errorf("a writer reported the source throttled: %v", m)
			}
			reports = append(reports, m)
		}
		c := clk.Client(endpoint, 0)
		reg := &shardmap.Registry{Client: c, Table: table}
		sched, _, err := reg.Lookup(context.Background(), bucketing.Stream{Space: bucketing.Events, Source: "meters"}, bucketing.Day(start))
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%d demand reports; schedule %+v; %d of %d attempts throttled", len(reports), sched, model.Throttled.Load(), model.Seen.Load())
		if len(sched) != 1 {
			t.Errorf("schedule %+v: raised, though the source asks half of its keys; raises: %v", sched, logLines(logs.String(), "shards raised"))
		}
		if n := countEvents(t, c, table, "meters", bucketing.Day(start), sched.MaxShards()); n != len(traffic.all) {
			t.Errorf("%d event items in the table, want %d", n, len(traffic.all))
		}
	})
}

// TestItemsOnOlderTableKeysCountForTheGSIKeysInEffect: an event stamped
// before a table raise is written to the old table keys but to the GSI
// keys in effect when it is built. Its write units count in what the
// GSI's keys took when it is stored and was built under the GSI count in
// effect; not when it was built under an earlier one, has no GSI copy, or
// was not stored.
func TestItemsOnOlderTableKeysCountForTheGSIKeysInEffect(t *testing.T) {
	day := time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)
	sched := bucketing.Schedule{{Shards: 4, GSIShards: 2}, {From: 615, Shards: 8, GSIShards: 5}}
	now := day.Add(10*time.Hour + 30*time.Minute)
	s := &seen{sched: sched, cur: adapt.Of(shardmap.InEffect(sched, day, now, now))}
	withGSI := item.Item{Attrs: map[string]types.AttributeValue{
		schema.GSIPK: &types.AttributeValueMemberS{Value: "G#ramp#2026-11-22T10#3"},
		"data":       &types.AttributeValueMemberS{Value: strings.Repeat("x", 1500)},
	}}
	without := item.Item{Attrs: map[string]types.AttributeValue{"data": &types.AttributeValueMemberS{Value: "x"}}}
	s.elsewhere(withGSI, true, now.Add(-time.Second)) // stored, on the GSI count in effect
	s.elsewhere(withGSI, true, day.Add(10*time.Hour)) // built before the GSI raise
	s.elsewhere(withGSI, false, now)                  // not stored
	s.elsewhere(without, true, now)                   // no GSI copy
	if w := float64(itemWCU(withGSI)); s.sample.Elsewhere != 4 || s.sample.ElsewhereGSIWCU != w || w < 2 {
		t.Fatalf("sample %+v: want 4 items elsewhere, %.0f GSI write units of the one stored on the GSI keys in effect", s.sample, w)
	}
}
