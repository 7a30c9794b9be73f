package query

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/shardline/shardline/internal/catalog"
	"github.com/shardline/shardline/internal/counts"
	"github.com/shardline/shardline/internal/ingest"
	"github.com/shardline/shardline/local/ddbstreams"
	"github.com/shardline/shardline/ops/sourcecounter"
	"github.com/shardline/shardline/testkit/testddb"
)

// TestDashboardRoutes: GET /v1/counts and GET /v1/sources through the query
// handler, on events written by the ingest handler and counted from the
// table's stream.
func TestDashboardRoutes(t *testing.T) {
	table := testddb.StreamTable(t)
	client := testddb.Client(t, testddb.Endpoint(t))
	in := ingest.New(ingest.DefaultConfig(table), client, ingest.Options{Now: func() time.Time { return now }})
	var k events.KinesisEvent
	for i := range 30 {
		src := []string{"orders", "orders/eu", "päyments #1"}[i%3]
		at := now.Add(-time.Duration(i) * 50 * time.Minute)
		b, _ := json.Marshal(map[string]any{"id": fmt.Sprint(i), "source": src, "type": fmt.Sprintf("t%d", i%2), "time": at.Format(time.RFC3339)})
		k.Records = append(k.Records, events.KinesisEventRecord{EventSource: "aws:kinesis", Kinesis: events.KinesisRecord{Data: b, SequenceNumber: fmt.Sprint(i)}})
	}
	if resp, err := in.Kinesis(loading(t), k); err != nil || len(resp.BatchItemFailures) > 0 {
		t.Fatalf("ingest: %v %v", err, resp.BatchItemFailures)
	}
	arn, err := ddbstreams.StreamARN(context.Background(), client, table)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := ddbstreams.Read(context.Background(), ddbstreams.Static(testddb.Endpoint(t)), arn)
	if err != nil {
		t.Fatal(err)
	}
	c := &sourcecounter.Counter{Client: client, Table: table, Retention: 30 * 24 * time.Hour}
	for shard, rs := range recs {
		if _, err := c.Apply(context.Background(), shard, rs); err != nil {
			t.Fatal(err)
		}
	}
	h := handlerFor(t, table, testddb.Endpoint(t))

	status, _, body := get(t, h, CountsRoute, url.Values{"source": {"orders"}, "from": {fmt.Sprint(now.Add(-24 * time.Hour).UnixMilli())},
		"to": {fmt.Sprint(now.UnixMilli())}, "interval": {"1h"}, "group_by": {"type"}})
	if status != 200 {
		t.Fatalf("counts: %d %s", status, body)
	}
	var cr counts.Response
	if err := json.Unmarshal([]byte(body), &cr); err != nil {
		t.Fatal(err)
	}
	// 9 of 10: the event at now is outside [from, to). Three requests:
	// where the fold and the roll-up stand, and the source's partition (no
	// L1 packs to read while no run is done and unrolled).
	total := 0
	for _, s := range cr.Series {
		if len(s.Points) != 24 {
			t.Errorf("series %q has %d points, want 24", s.Type, len(s.Points))
		}
		for _, p := range s.Points {
			total += int(p.Count)
		}
	}
	if len(cr.Series) != 2 || cr.Series[0].Type != "t0" || cr.Series[1].Type != "t1" || total != 9 || cr.Plan.Requests != 3 {
		t.Fatalf("counts: %d series, total %d, plan %+v: %s", len(cr.Series), total, cr.Plan, body)
	}

	var names []string
	q := url.Values{"limit": {"1"}, "from": {now.Add(-2 * 24 * time.Hour).Format(time.RFC3339)}, "to": {now.Format(time.RFC3339)}}
	for range 5 {
		status, _, body = get(t, h, SourcesRoute, q)
		var sr catalog.Response
		if status != 200 || json.Unmarshal([]byte(body), &sr) != nil {
			t.Fatalf("sources: %d %s", status, body)
		}
		for _, s := range sr.Sources {
			names = append(names, s.Source)
		}
		if sr.NextCursor == "" {
			break
		}
		q.Set("cursor", sr.NextCursor)
	}
	if strings.Join(names, "|") != "orders|orders/eu|päyments #1" {
		t.Fatalf("sources %q", names)
	}

	for route, bad := range map[string]string{
		CountsRoute + "?source=orders&interval=1m&from=2026-11-01T00:00:00Z": "interval",
		CountsRoute + "?source=orders&from=2026-09-01T00:00:00Z":             "to",
		CountsRoute + "?source=orders&bogus=1":                               "bogus",
		CountsRoute + "?source=orders&source=x":                              "source",
		SourcesRoute + "?cursor=" + url.QueryEscape(q.Get("cursor")) + "x":   "cursor",
		SourcesRoute + "?limit=0":                                            "limit",
	} {
		path, raw, _ := strings.Cut(route, "?")
		vals, _ := url.ParseQuery(raw)
		status, _, body := get(t, h, path, vals)
		if status != 400 || !strings.Contains(body, `"`+bad+`: `) {
			t.Errorf("%s: %d %s, want 400 naming %s", route, status, body, bad)
		}
	}
}

// TestDashboardSamples: the sample requests in events/ are answered by the
// handler as Lambda would invoke it.
func TestDashboardSamples(t *testing.T) {
	h := handlerFor(t, testddb.Table(t), testddb.Endpoint(t))
	for _, name := range []string{"api-counts-v2.json", "api-sources-v2.json"} {
		b, err := os.ReadFile(filepath.Join("..", "..", "events", name))
		if err != nil {
			t.Fatal(err)
		}
		out, err := h.Invoke(context.Background(), b)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		resp := out.(events.APIGatewayV2HTTPResponse)
		if resp.StatusCode != 200 || (!strings.Contains(resp.Body, `"series":[`) && !strings.Contains(resp.Body, `"sources":[]`)) {
			t.Errorf("%s: %d %s", name, resp.StatusCode, resp.Body)
		}
	}
}
