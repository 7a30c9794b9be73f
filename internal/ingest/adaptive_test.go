package ingest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shardline/shardline/internal/adapt"
	"github.com/shardline/shardline/internal/emf"
	"github.com/shardline/shardline/internal/pace"
	"github.com/shardline/shardline/internal/schema"
	"github.com/shardline/shardline/internal/shardmap"
	"github.com/shardline/shardline/pkg/bucketing"
	"github.com/shardline/shardline/testkit/faultproxy"
	"github.com/shardline/shardline/testkit/testddb"
)

// TestThrottledSourceIsRaised: a source twice over its one GSI key on the
// partition model gets a raise recorded in its shard record, logged and
// counted; another source written by the same warm container is left
// alone, and nothing is lost. Compressed: the model's and the handler's
// clock run ten times the wall's.
func TestThrottledSourceIsRaised(t *testing.T) {
	t.Parallel() // a simulation: bound to its clock, not the CPU (see simClock)
	endpoint := testddb.Endpoint(t)
	table := testddb.Table(t)
	proxy := faultproxy.For(t, endpoint)
	start := fixtureNow.Add(-2 * time.Minute)
	clk := &simClock{start: start, real: time.Now(), speed: 10}
	model := &faultproxy.Partitions{WCU: 20, Keys: []string{schema.PK, schema.GSIPK}, Now: clk.now}
	proxy.SetRule(model.Rule())
	var logs, metrics bytes.Buffer
	var mu sync.Mutex
	pol := &adapt.Policy{KeyWCU: 20, MinItems: 5, MinThrottled: 2}
	h := New(DefaultConfig(table), testddb.Client(t, proxy.URL), Options{
		Now: clk.now, Sleep: clk.sleep, Policy: pol, Pacer: &pace.Pacer{KeyWCU: 20, Now: clk.now},
		Logger: slog.New(slog.NewJSONHandler(&lockedWriter{&mu, &logs}, &slog.HandlerOptions{Level: slog.LevelDebug})), Metrics: emf.New(&lockedWriter{&mu, &metrics}, nil),
	})
	hot, calm := &shardQueue{name: "1", h: h}, &shardQueue{name: "2", h: h}
	want := map[[2]string]bool{}
	var made time.Duration // simulated time the events made so far cover
	for {
		now := clk.now()
		if now.Sub(start) > 10*time.Minute {
			t.Fatalf("not drained after 10 minutes: %d+%d records waiting", len(hot.records), len(calm.records))
		}
		for ; made < min(now.Sub(start), time.Minute); made += 100 * time.Millisecond {
			at := start.Add(made)
			for i := range 4 { // 40 events a second: twice the GSI key's 20
				e := rampEvent{id: fmt.Sprintf("h-%05d", len(want)), at: at.Add(time.Duration(i) * 25 * time.Millisecond)}
				hot.records = append(hot.records, e)
				want[[2]string{"hot", e.id}] = true
			}
			if made%time.Second == 0 {
				e := rampEvent{id: fmt.Sprintf("c-%05d", len(want)), at: at}
				calm.records = append(calm.records, e)
				want[[2]string{"calm", e.id}] = true
			}
		}
		if made >= time.Minute && len(hot.records)+len(calm.records) == 0 {
			break
		}
		hot.deliver(t, "hot", 100, 500*time.Millisecond)
		calm.deliver(t, "calm", 100, 500*time.Millisecond)
		time.Sleep(10 * time.Millisecond)
	}
	if model.Throttled.Load() == 0 {
		t.Fatal("the model throttled nothing")
	}
	reg := &shardmap.Registry{Client: testddb.Client(t, endpoint), Table: table}
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
	for _, line := range strings.Split(logs.String(), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) == nil && m["msg"] == "shards raised" {
			raised = m
		}
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
	e := &env{table: table, client: testddb.Client(t, endpoint)}
	e.assertExactlyOnce(t, want, 0)
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
