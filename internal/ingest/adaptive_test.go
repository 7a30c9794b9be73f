package ingest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/shardline/shardline/internal/adapt"
	"github.com/shardline/shardline/internal/emf"
	"github.com/shardline/shardline/internal/faultproxy"
	"github.com/shardline/shardline/internal/schema"
	"github.com/shardline/shardline/internal/shardmap"
	"github.com/shardline/shardline/internal/testdb"
	"github.com/shardline/shardline/pkg/bucketing"
)

// TestThrottledSourceIsRaised: a source throttled by the partition model
// gets a raise recorded in its shard record before the next batch, logged
// and counted; another source in the same batches is left alone, and
// nothing is lost.
func TestThrottledSourceIsRaised(t *testing.T) {
	endpoint := testdb.Endpoint(t)
	table := testdb.Table(t)
	proxy := faultproxy.For(t, endpoint)
	model := &faultproxy.Partitions{WCU: 20, Keys: []string{schema.PK, schema.GSIPK}}
	proxy.SetRule(model.Rule())
	var logs, metrics bytes.Buffer
	pol := &adapt.Policy{KeyWCU: 20, MinItems: 5, MinThrottled: 2}
	h := New(DefaultConfig(table), testdb.Client(t, proxy.URL), Options{
		Now: func() time.Time { return fixtureNow }, Policy: pol,
		Logger: slog.New(slog.NewJSONHandler(&logs, nil)), Metrics: emf.New(&metrics, nil),
	})
	var batch [][]byte
	want := map[[2]string]bool{}
	for i := range 120 {
		src := "hot"
		if i%20 == 0 {
			src = "calm"
		}
		id := fmt.Sprintf("e-%03d", i)
		batch = append(batch, eventJSON(src, id, fixtureNow.Add(-time.Duration(i)*time.Millisecond)))
		want[[2]string{src, id}] = true
	}
	for try := 0; len(batch) > 0; try++ {
		if try == 20 {
			t.Fatalf("%d records still failing", len(batch))
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		ev := kinesisBatch(batch...)
		resp, err := h.Kinesis(ctx, ev)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		failed := failedSeqs(resp)
		var again [][]byte
		for _, r := range ev.Records {
			if failed[r.Kinesis.SequenceNumber] {
				again = append(again, r.Kinesis.Data)
			}
		}
		batch = again
	}
	if model.Throttled.Load() == 0 {
		t.Fatal("the model throttled nothing")
	}
	reg := &shardmap.Registry{Client: testdb.Client(t, endpoint), Table: table}
	day := bucketing.Day(fixtureNow)
	hot, _, err := reg.Lookup(context.Background(), bucketing.Stream{Space: bucketing.Events, Source: "hot"}, day)
	if err != nil {
		t.Fatal(err)
	}
	if len(hot) < 2 || hot.Last().GSIShards < 4*DefaultGSIShards {
		t.Fatalf("hot source's schedule %+v: no raise of its GSI shards", hot)
	}
	if hot.Last().From < fixtureNow.Hour()*60+int(shardmap.Lead/time.Minute) {
		t.Fatalf("raise %+v starts before the lead", hot.Last())
	}
	calm, _, err := reg.Lookup(context.Background(), bucketing.Stream{Space: bucketing.Events, Source: "calm"}, day)
	if err != nil || len(calm) != 1 {
		t.Fatalf("calm source's schedule %+v %v: raised", calm, err)
	}
	var raised map[string]any
	for _, line := range strings.Split(logs.String(), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) == nil && m["msg"] == "shards raised" {
			raised = m
		}
	}
	if raised == nil || raised["event_source"] != "hot" || !strings.HasPrefix(fmt.Sprint(raised["reason"]), "throttled:") {
		t.Fatalf("raise log line %v", raised)
	}
	if !strings.Contains(metrics.String(), `"ShardRaises":1`) {
		t.Fatalf("no ShardRaises metric in %s", metrics.String())
	}
	e := &env{table: table, client: testdb.Client(t, endpoint)}
	e.assertExactlyOnce(t, want, 0)
}
