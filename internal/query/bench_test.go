package query

import (
	"context"
	"encoding/json"
	"net/url"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/shardline/shardline/internal/testdb"
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
			h := handlerFor(b, c.table, testdb.Endpoint(b))
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
