package benchrun

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"sort"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/shardline/shardline/internal/ingest"
	"github.com/shardline/shardline/internal/query"
)

// QueryRow prices one dashboard query on one path.
type QueryRow struct {
	Source    string  `json:"source"`
	Query     string  `json:"query"`
	Asked     string  `json:"asked"` // "by cost" (the default), "gsi" (forced) or "consistent"
	Path      string  `json:"path"`
	Events    int     `json:"events"`
	Requests  int     `json:"requests"`
	RCU       float64 `json:"consumed_rcu"`
	LatencyMs float64 `json:"latency_ms"`
}

// sources of the query benchmark: a busy one (150 events an hour) and a
// quiet one (one an hour), each over the seven days before now.
var sources = []struct {
	name    string
	perHour int
}{{"busy", 150}, {"quiet", 1}}

func loadQueryData(ctx context.Context, client *dynamodb.Client, table string, now time.Time) error {
	h := ingest.New(ingest.DefaultConfig(table), client, ingest.Options{Now: func() time.Time { return now }})
	for _, s := range sources {
		var ev events.KinesisEvent
		var batch []json.RawMessage
		n := 7 * 24 * s.perHour
		for i := range n {
			at := now.Add(-time.Duration(i+1) * 7 * 24 * time.Hour / time.Duration(n))
			b, _ := json.Marshal(map[string]any{"id": fmt.Sprintf("%s-%d", s.name, i), "source": s.name, "type": "reading",
				"time": at.Format(time.RFC3339Nano), "data": map[string]any{"i": i, "v": 0.5}})
			batch = append(batch, b)
			if len(batch) == 50 || i == n-1 {
				data, _ := json.Marshal(batch)
				ev.Records = append(ev.Records, events.KinesisEventRecord{EventSource: "aws:kinesis",
					Kinesis: events.KinesisRecord{Data: data, SequenceNumber: fmt.Sprint(len(ev.Records))}})
				batch = nil
			}
			if len(ev.Records) == 100 || i == n-1 {
				resp, err := h.Kinesis(ctx, ev)
				if err != nil || len(resp.BatchItemFailures) > 0 {
					return fmt.Errorf("load %s: %v, %d failures", s.name, err, len(resp.BatchItemFailures))
				}
				ev.Records = nil
			}
		}
	}
	return nil
}

// queries runs "the newest 100 events of the last hour / 24 hours / 7
// days" for each source as the handler chooses by cost, on the GSI forced,
// and consistent, six times, and keeps the median latency of the last five.
func queries(ctx context.Context, client *dynamodb.Client, table string, now time.Time) ([]QueryRow, error) {
	var rows []QueryRow
	for _, s := range sources {
		for _, w := range []struct {
			name string
			span time.Duration
		}{{"newest 100 of 1 h", time.Hour}, {"newest 100 of 24 h", 24 * time.Hour}, {"newest 100 of 7 d", 7 * 24 * time.Hour}} {
			for _, asked := range []string{"by cost", query.PathGSI, "consistent"} {
				o := query.Options{Now: func() time.Time { return now }}
				if asked == query.PathGSI {
					o.Path = query.PathGSI
				}
				h := query.NewHandler(query.Config{Table: table}, client, o)
				q := url.Values{"source": {s.name}, "limit": {"100"}, "from": {now.Add(-w.span).Format(time.RFC3339)}, "to": {now.Format(time.RFC3339)}}
				if asked == "consistent" {
					q.Set("consistent", "true")
				}
				req := events.APIGatewayV2HTTPRequest{Version: "2.0", RawPath: query.EventsRoute, RawQueryString: q.Encode()}
				req.RequestContext.HTTP.Method = "GET"
				var lat []float64
				var last query.EventsResponse
				for range 6 {
					start := time.Now()
					resp, err := h.HTTP(ctx, req)
					d := time.Since(start)
					if err != nil || resp.StatusCode != 200 {
						return nil, fmt.Errorf("query %v: %v %d %s", q, err, resp.StatusCode, resp.Body)
					}
					last = query.EventsResponse{}
					if err := json.Unmarshal([]byte(resp.Body), &last); err != nil {
						return nil, err
					}
					lat = append(lat, float64(d.Microseconds())/1000)
				}
				lat = lat[1:] // the first warms the container's caches, as in a busy container
				sort.Float64s(lat)
				rows = append(rows, QueryRow{Source: s.name, Query: w.name, Asked: asked, Path: last.Plan.Path, Events: len(last.Events),
					Requests: last.Plan.Requests, RCU: last.Plan.ConsumedRCU, LatencyMs: lat[len(lat)/2]})
			}
		}
	}
	return rows, nil
}
