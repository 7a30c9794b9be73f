package query

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/shardline/shardline/internal/ingest"
	"github.com/shardline/shardline/testkit/testddb"
)

// BenchmarkNewest100Of24h reports, per page, the DynamoDB requests and read
// capacity that "the newest 100 events of the last 24 hours" costs on each
// path, for a source writing about 42 events an hour over 4 shards and 2
// GSI shards. ns/op is DynamoDB Local's latency and says little; the
// requests and RCU are what a real table would bill.
func BenchmarkNewest100Of24h(b *testing.B) {
	c := loadCorpus(b)
	for _, path := range []string{PathGSI, PathScatter} {
		b.Run(path, func(b *testing.B) {
			// A fresh handler per run: the GSI path's shard-record cache
			// starts cold, as in a new container, and warms up.
			h := newHandler(b, c.table, testddb.Endpoint(b)) // unchecked: benchmarks measure the handler alone
			q := url.Values{"source": {c.source}, "from": {now.Add(-24 * time.Hour).Format(time.RFC3339)}, "to": {now.Format(time.RFC3339)}}
			if path == PathScatter {
				q.Set("consistent", "true")
			}
			req := events.APIGatewayV2HTTPRequest{Version: "2.0", RawPath: EventsRoute, RawQueryString: q.Encode()}
			req.RequestContext.HTTP.Method = "GET"
			var reqs, rcu float64
			for b.Loop() {
				resp, _ := h.HTTP(context.Background(), req)
				var r EventsResponse
				if resp.StatusCode != 200 || json.Unmarshal([]byte(resp.Body), &r) != nil || len(r.Events) != 100 || r.Plan.Path != path {
					b.Fatalf("%d %s", resp.StatusCode, resp.Body)
				}
				reqs += float64(r.Plan.Requests)
				rcu += r.Plan.ConsumedRCU
			}
			b.ReportMetric(reqs/float64(b.N), "requests/page")
			b.ReportMetric(rcu/float64(b.N), "RCU/page")
		})
	}
}

// BenchmarkDashboard prices the dashboard pages of the benchmark report
// (bench/results/results.md, "Query"): the newest 100 events of the last
// hour, 24 hours and 7 days of a busy source (150 events an hour) and a
// quiet one (one an hour), 4 shards and 1 GSI shard, on each path, with a
// warm shard-record cache. It reports requests, RCU and items read per
// page.
func BenchmarkDashboard(b *testing.B) {
	table := testddb.Table(b)
	client := testddb.Client(b, testddb.Endpoint(b))
	in := ingest.New(ingest.DefaultConfig(table), client, ingest.Options{Now: func() time.Time { return now }})
	for _, s := range []struct {
		name    string
		perHour int
	}{{"busy", 150}, {"quiet", 1}} {
		n := 7 * 24 * s.perHour
		var kev events.KinesisEvent
		for i := 0; i < n; i += 50 {
			var batch []json.RawMessage
			for j := i; j < min(i+50, n); j++ {
				at := now.Add(-time.Duration(j+1) * 7 * 24 * time.Hour / time.Duration(n))
				raw, _ := json.Marshal(map[string]any{"id": fmt.Sprintf("%s-%d", s.name, j), "source": s.name, "type": "reading",
					"time": at.Format(time.RFC3339Nano), "data": map[string]any{"i": j, "v": 0.5}})
				batch = append(batch, raw)
			}
			data, _ := json.Marshal(batch)
			kev.Records = append(kev.Records, events.KinesisEventRecord{EventSource: "aws:kinesis",
				Kinesis: events.KinesisRecord{Data: data, SequenceNumber: fmt.Sprint(i)}})
		}
		if resp, err := in.Kinesis(loading(b), kev); err != nil || len(resp.BatchItemFailures) > 0 {
			b.Fatalf("load %s: %v %v", s.name, err, resp.BatchItemFailures)
		}
	}
	for _, src := range []string{"busy", "quiet"} {
		for _, span := range []struct {
			name string
			d    time.Duration
		}{{"1h", time.Hour}, {"24h", 24 * time.Hour}, {"7d", 7 * 24 * time.Hour}} {
			for _, path := range []string{PathGSI, PathScatter} {
				b.Run(src+"/"+span.name+"/"+path, func(b *testing.B) {
					c := &counting{Client: client}
					h := New(Config{Table: table}, c, Options{Now: func() time.Time { return now }})
					q := url.Values{"source": {src}, "from": {now.Add(-span.d).Format(time.RFC3339)}, "to": {now.Format(time.RFC3339)}}
					if path == PathScatter {
						q.Set("consistent", "true")
					}
					req := events.APIGatewayV2HTTPRequest{Version: "2.0", RawPath: EventsRoute, RawQueryString: q.Encode()}
					req.RequestContext.HTTP.Method = "GET"
					_, _ = h.HTTP(context.Background(), req) // warm the shard-record cache, as in a busy container
					c.items.Store(0)
					var reqs, rcu, evs float64
					for b.Loop() {
						resp, _ := h.HTTP(context.Background(), req)
						var r EventsResponse
						if resp.StatusCode != 200 || json.Unmarshal([]byte(resp.Body), &r) != nil || r.Plan.Path != path {
							b.Fatalf("%d %s", resp.StatusCode, resp.Body)
						}
						reqs += float64(r.Plan.Requests)
						rcu += r.Plan.ConsumedRCU
						evs += float64(len(r.Events))
					}
					b.ReportMetric(evs/float64(b.N), "events/page")
					b.ReportMetric(reqs/float64(b.N), "requests/page")
					b.ReportMetric(rcu/float64(b.N), "RCU/page")
					b.ReportMetric(float64(c.items.Load())/float64(b.N), "items-read/page")
				})
			}
		}
	}
}
