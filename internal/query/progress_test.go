package query

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/shardline/shardline/internal/ingest"
	"github.com/shardline/shardline/testkit/simtime"
	"github.com/shardline/shardline/testkit/testddb"
)

// loadBusyHour stores n events of type "a" over the hour before now, about
// 400 bytes each, and among them rare events of type "b" with subject
// "rare"; it returns the rare events' ids in time order.
func loadBusyHour(t *testing.T, table, source string, n, rare int) []string {
	t.Helper()
	in := ingest.New(ingest.DefaultConfig(table), testddb.Client(t, testddb.Endpoint(t)), ingest.Options{Now: func() time.Time { return now }})
	pad := strings.Repeat("x", 300)
	var ids []string
	var kev events.KinesisEvent
	var batch []json.RawMessage
	for i := range n {
		typ, subject, id := "a", "common", fmt.Sprintf("a-%05d", i)
		if i%(n/rare) == n/rare/2 {
			typ, subject, id = "b", "rare", fmt.Sprintf("b-%05d", i)
			ids = append(ids, id)
		}
		at := now.Add(-time.Hour).Add(time.Duration(i) * time.Hour / time.Duration(n))
		b, _ := json.Marshal(map[string]any{"id": id, "source": source, "type": typ, "subject": subject,
			"time": at.Format(time.RFC3339Nano), "data": map[string]any{"pad": pad}})
		if batch = append(batch, b); len(batch) == 100 || i == n-1 {
			raw, _ := json.Marshal(batch)
			kev.Records = append(kev.Records, events.KinesisEventRecord{EventSource: "aws:kinesis",
				Kinesis: events.KinesisRecord{Data: raw, SequenceNumber: fmt.Sprint(i)}})
			batch = nil
		}
		if len(kev.Records) == 20 || i == n-1 {
			if resp, err := in.Kinesis(loading(t), kev); err != nil || len(resp.BatchItemFailures) > 0 {
				t.Fatalf("load: %v %v", err, resp.BatchItemFailures)
			}
			kev.Records = nil
		}
	}
	return ids
}

// TestFilteredPagesAlwaysProgress: 1,600 events of type "a" in an hour
// (about 640 KB), 8 of type "b" (subject "rare") among them, read through
// a DynamoDB that takes 250 ms a request by pages that each get 1 s (the
// GSI's) or 800 ms (the shards', read four at once), as Lambda's context
// gives them, on a virtual clock (testkit/simtime: the delay and the
// budgets are the clock's, so a busy machine cannot starve a page; on the
// wall clock one did, and answered 503). A filtered read is sized by bytes
// (DynamoDB's Limit counts items before the filter), and a page its
// deadline stops answers 200 with the events found so far and a cursor
// where its reading stopped. So every page is a 200 whose cursor moves on,
// and the walk reaches the end with every "b" event exactly once, on the
// GSI and on the base table's shards, in both orders. However many pages
// that takes is not the verdict, only that the deadline stops some (more
// than one page each). Before, a filtered read asked for about 102 items
// a request, and every try answered 503 with no cursor.
//
// 1,600 events suffice: the deadline binds on the number of requests a
// page makes in turn (three or four, at 250 ms each), not on the bytes.
// With 24,000 (10 MB) the walks took 3 and 180 pages; with 1,600, 3 and
// 12. A page that cannot stop early still answers 503 at this size, on
// both paths (tried by making stop.go's stop never answer a partial page).
func TestFilteredPagesAlwaysProgress(t *testing.T) {
	t.Parallel() // its own table; it waits on DynamoDB Local and the proxy's delay more than on the CPU
	table := testddb.Table(t)
	want := loadBusyHour(t, table, "busy", 1_600, 8)
	endpoint := testddb.Endpoint(t)
	simtime.Run(t, now, func(t *testing.T, clk *simtime.Clock) {
		h := checked(t, New(Config{Table: table}, clk.Client(endpoint, 250*time.Millisecond), Options{Now: func() time.Time { return now }}))
		from, to := now.Add(-2*time.Hour).Format(time.RFC3339), now.Format(time.RFC3339)
		for _, c := range []struct {
			q      url.Values
			budget time.Duration
		}{
			{url.Values{"source": {"busy"}, "type": {"b"}, "from": {from}, "to": {to}}, time.Second},
			{url.Values{"source": {"busy"}, "subject": {"rare"}, "order": {"asc"}, "consistent": {"true"}, "from": {from}, "to": {to}}, 800 * time.Millisecond},
		} {
			q := c.q
			got, pages := walkWithDeadline(t, h, q, c.budget)
			if pages < 2 {
				t.Fatalf("%v: one page: the deadline never stopped a page, so this test did not test it", q)
			}
			w := want
			if q.Get("order") != "asc" {
				w = reversed(want)
			}
			if !slices.Equal(got, w) {
				t.Fatalf("%v: got %v in %d pages, want %v once each, in order", q, got, pages, w)
			}
			t.Logf("%v: %d events in %d pages", q, len(got), pages)
		}
	})
}

// walkWithDeadline follows next_cursor to the end, each page under a
// context of its own that ends after budget, and fails t on any page that
// is not a 200 or whose cursor does not move on.
func walkWithDeadline(t *testing.T, h apiHandler, q url.Values, budget time.Duration) (ids []string, pages int) {
	t.Helper()
	q = cloneValues(q)
	seen := map[string]bool{}
	for pages = 1; ; pages++ {
		if pages > 200 {
			t.Fatalf("%v: more than 200 pages", q)
		}
		req := events.APIGatewayV2HTTPRequest{Version: "2.0", RawPath: EventsRoute, RawQueryString: q.Encode()}
		req.RequestContext.HTTP.Method = "GET"
		ctx, cancel := context.WithTimeout(context.Background(), budget)
		resp, err := h.HTTP(ctx, req)
		cancel()
		var r EventsResponse
		if err != nil || resp.StatusCode != 200 || json.Unmarshal([]byte(resp.Body), &r) != nil {
			t.Fatalf("%v page %d: %v %d %.300s", q, pages, err, resp.StatusCode, resp.Body)
		}
		for _, raw := range r.Events {
			var e struct{ ID string }
			_ = json.Unmarshal(raw, &e)
			ids = append(ids, e.ID)
		}
		if r.NextCursor == "" {
			return ids, pages
		}
		if seen[r.NextCursor] || r.NextCursor == q.Get("cursor") {
			t.Fatalf("%v page %d: the cursor did not move on", q, pages)
		}
		seen[r.NextCursor] = true
		q.Set("cursor", r.NextCursor)
	}
}

func cloneValues(q url.Values) url.Values {
	out := url.Values{}
	for k, v := range q {
		out[k] = slices.Clone(v)
	}
	return out
}
