package query

import (
	"context"
	"net/url"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/shardline/shardline/internal/catalog"
	"github.com/shardline/shardline/internal/shardmap"
	"github.com/shardline/shardline/pkg/bucketing"
	"github.com/shardline/shardline/testkit/faultproxy"
	"github.com/shardline/shardline/testkit/simtime"
	"github.com/shardline/shardline/testkit/testddb"
)

// TestScatterConcurrencyBounded: a 4-day scatter over 64 shards (256
// queries, 16 times the bound) never has more than the configured requests
// in flight. One day's 64 shards already pass the bound when it is not
// kept (tried: a semaphore 100 times too large let 64 fly at once); the
// 31 days it read before (1,984 queries) added only DynamoDB Local's work.
func TestScatterConcurrencyBounded(t *testing.T) {
	table := testddb.Table(t)
	client := testddb.Client(t, testddb.Endpoint(t))
	reg := &shardmap.Registry{Client: client, Table: table, NewDay: catalog.Lister(client, table),
		Config: shardmap.Config{Shards: bucketing.Counts{Default: 64}, GSIShards: bucketing.Counts{Default: 1}}}
	from := now.Add(-4 * 24 * time.Hour)
	for d := from; d.Before(now); d = d.Add(24 * time.Hour) {
		if _, err := reg.Schedule(context.Background(), bucketing.Stream{Space: bucketing.Events, Source: "wide"}, bucketing.Day(d)); err != nil {
			t.Fatal(err)
		}
	}
	p := faultproxy.For(t, testddb.Endpoint(t))
	const conc = 16
	h := checked(t, New(Config{Table: table, Concurrency: conc}, testddb.Client(t, p.URL), Options{Now: func() time.Time { return now }}))
	status, _, body := get(t, h, EventsRoute, url.Values{"source": {"wide"}, "consistent": {"true"}, "limit": {"1000"},
		"from": {from.Format(time.RFC3339)}, "to": {now.Format(time.RFC3339)}})
	if status != 200 {
		t.Fatalf("%d %s", status, body)
	}
	if got := p.MaxInFlight(); got > conc || got < 2 {
		t.Fatalf("%d requests in flight at once, want at most %d (and some parallelism)", got, conc)
	}
	t.Logf("max in flight %d of %d allowed", p.MaxInFlight(), conc)
}

// TestQueryThatGetsNowhereAnswers503: a page whose deadline comes before
// DynamoDB answers anything (150 ms a request, a 200 ms context: 150 ms of
// it for reading) has no event to give and no position to continue from:
// it answers 503 with Retry-After, before its deadline. A page that got
// somewhere answers what it found, with a cursor
// (TestFilteredPagesAlwaysProgress). On a virtual clock (testkit/simtime):
// the latency and the deadline are the clock's, so a busy machine cannot
// make the handler look late; on the wall clock it could.
func TestQueryThatGetsNowhereAnswers503(t *testing.T) {
	c := loadCorpus(t)
	endpoint := testddb.Endpoint(t)
	simtime.Run(t, now, func(t *testing.T, clk *simtime.Clock) {
		h := checked(t, New(Config{Table: c.table}, clk.Client(endpoint, 150*time.Millisecond), Options{Now: func() time.Time { return now }}))
		q := url.Values{"source": {c.source}, "consistent": {"true"}, "limit": {"1000"},
			"from": {now.Add(-72 * time.Hour).Format(time.RFC3339)}, "to": {now.Format(time.RFC3339)}}
		req := events.APIGatewayV2HTTPRequest{Version: "2.0", RawPath: EventsRoute, RawQueryString: q.Encode()}
		req.RequestContext.HTTP.Method = "GET"
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		resp, err := h.HTTP(ctx, req)
		if err != nil || resp.StatusCode != 503 || resp.Headers["Retry-After"] == "" {
			t.Fatalf("%v %d %v %s", err, resp.StatusCode, resp.Headers, resp.Body)
		}
		if ctx.Err() != nil {
			t.Fatal("the handler answered after its deadline")
		}
	})
}
