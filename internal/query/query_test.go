package query

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/url"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/shardline/shardline/internal/ingest"
	"github.com/shardline/shardline/testkit/faultproxy"
	"github.com/shardline/shardline/testkit/testddb"
)

func TestMain(m *testing.M) { testddb.Main(m) }

var now = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

type ev struct {
	ID, Type, Subject string
	Time              time.Time
}

// corpus is a few thousand events of one source over three days, many
// sharing a timestamp, stored once per test binary through the real ingest
// handler with 4 shards and 2 GSI shards.
type corpus struct {
	table  string
	source string
	events []ev
}

var (
	corpusOnce sync.Once
	shared     *corpus
)

func loadCorpus(t testing.TB) *corpus {
	t.Helper()
	corpusOnce.Do(func() {
		c := &corpus{table: testddb.SharedTable(t), source: "sensors/eu#1"}
		r := rand.New(rand.NewPCG(7, 7))
		start := now.Add(-71 * time.Hour)
		var payloads [][]byte
		var batch []json.RawMessage
		for i := range 3000 {
			e := ev{
				ID:      fmt.Sprintf("%s-%d", []string{"a", "B", "#", "ü", "%z"}[r.IntN(5)], r.IntN(100000)),
				Type:    []string{"reading", "alarm", "heartbeat"}[r.IntN(3)],
				Subject: fmt.Sprintf("device/%d", r.IntN(5)),
				Time:    start.Add(time.Duration(r.Int64N(int64(71 * time.Hour)))).Truncate(time.Millisecond),
			}
			if i > 0 && r.IntN(5) == 0 { // share a timestamp with an earlier event
				e.Time = c.events[r.IntN(len(c.events))].Time
			}
			c.events = append(c.events, e)
			b, _ := json.Marshal(map[string]any{"id": e.ID, "source": c.source, "type": e.Type, "subject": e.Subject,
				"time": e.Time.Format(time.RFC3339Nano), "data": map[string]any{"i": i}})
			batch = append(batch, b)
			if len(batch) == 10 {
				p, _ := json.Marshal(batch)
				payloads = append(payloads, p)
				batch = nil
			}
		}
		c.events = dedupe(c.events)
		cfg := ingest.DefaultConfig(c.table)
		cfg.Shards.Default, cfg.GSIShards.Default = 4, 2
		h := ingest.New(cfg, testddb.Client(t, testddb.Endpoint(t)), ingest.Options{Now: func() time.Time { return now }})
		var kev events.KinesisEvent
		for i, p := range payloads {
			kev.Records = append(kev.Records, events.KinesisEventRecord{EventSource: "aws:kinesis",
				Kinesis: events.KinesisRecord{Data: p, SequenceNumber: fmt.Sprint(i)}})
		}
		resp, err := h.Kinesis(loading(t), kev)
		if err != nil || len(resp.BatchItemFailures) > 0 {
			t.Fatalf("load corpus: %v %v", err, resp.BatchItemFailures)
		}
		shared = c
	})
	if shared == nil {
		t.Fatal("corpus failed to load")
	}
	return shared
}

// dedupe keeps one event per (id, time), as the table does.
func dedupe(in []ev) []ev {
	seen := map[string]bool{}
	var out []ev
	for _, e := range in {
		k := e.ID + "\x00" + e.Time.String()
		if !seen[k] {
			seen[k] = true
			out = append(out, e)
		}
	}
	return out
}

// reference is what a query must return: the events in range and matching
// the filters, sorted by (time, id bytewise), reversed for desc.
func (c *corpus) reference(from, to time.Time, typ, subject string, o Order) []string {
	var sel []ev
	for _, e := range c.events {
		if e.Time.Before(from) || !e.Time.Before(to) || (typ != "" && e.Type != typ) || (subject != "" && e.Subject != subject) {
			continue
		}
		sel = append(sel, e)
	}
	sort.Slice(sel, func(i, j int) bool {
		if !sel[i].Time.Equal(sel[j].Time) {
			return sel[i].Time.Before(sel[j].Time)
		}
		return sel[i].ID < sel[j].ID
	})
	keys := make([]string, len(sel))
	for i, e := range sel {
		keys[i] = e.ID + "@" + e.Time.Format(time.RFC3339Nano)
	}
	if o == Desc {
		for i, j := 0, len(keys)-1; i < j; i, j = i+1, j-1 {
			keys[i], keys[j] = keys[j], keys[i]
		}
	}
	return keys
}

// newHandler is a handler on table at endpoint, at now.
func newHandler(t testing.TB, table, endpoint string) *Handler {
	return newHandlerOn(t, table, endpoint, "")
}

// newHandlerOn is newHandler with eventually consistent pages served by
// path (PathGSI, PathScatter, or "" for the cheaper).
func newHandlerOn(t testing.TB, table, endpoint, path string) *Handler {
	return New(Config{Table: table}, testddb.Client(t, endpoint), Options{Now: func() time.Time { return now }, Path: path})
}

// handlerFor is newHandler, its answers checked against the OpenAPI document.
func handlerFor(t testing.TB, table, endpoint string) apiHandler {
	return checked(t, newHandler(t, table, endpoint))
}

// handlerOn is newHandlerOn, its answers checked against the OpenAPI
// document.
func handlerOn(t testing.TB, table, endpoint, path string) apiHandler {
	return checked(t, newHandlerOn(t, table, endpoint, path))
}

func get(t *testing.T, h apiHandler, path string, q url.Values) (int, map[string]string, string) {
	t.Helper()
	req := events.APIGatewayV2HTTPRequest{Version: "2.0", RawPath: path, RawQueryString: q.Encode()}
	req.RequestContext.HTTP.Method = "GET"
	resp, err := h.HTTP(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Headers, resp.Body
}

// pageThrough follows next_cursor to the end and returns the events' keys
// and the plans of the pages.
func pageThrough(t *testing.T, h apiHandler, q url.Values, maxPages int) ([]string, []Plan) {
	t.Helper()
	var keys []string
	var plans []Plan
	for page := 0; ; page++ {
		if page == maxPages {
			t.Fatalf("more than %d pages for %v", maxPages, q)
		}
		status, _, body := get(t, h, EventsRoute, q)
		if status != 200 {
			t.Fatalf("%v: %d %s", q, status, body)
		}
		var r EventsResponse
		if err := json.Unmarshal([]byte(body), &r); err != nil {
			t.Fatal(err)
		}
		for _, raw := range r.Events {
			var e struct{ ID, Time string }
			if err := json.Unmarshal(raw, &e); err != nil {
				t.Fatal(err)
			}
			keys = append(keys, e.ID+"@"+e.Time)
		}
		plans = append(plans, r.Plan)
		if r.NextCursor == "" {
			return keys, plans
		}
		limit := q.Get("limit")
		if limit == "" {
			limit = "100"
		}
		if len(r.Events) == 0 || fmt.Sprint(len(r.Events)) != limit {
			t.Fatalf("a page with a next cursor holds %d events, want the limit %s", len(r.Events), limit)
		}
		q.Set("cursor", r.NextCursor)
	}
}

// TestPathsAgreeWithReference: for many random queries, the GSI and the
// scatter path page through exactly the reference list.
//
// 24 queries, each paged in at most about nine pages (the limit is at
// least an eighth of the events), by four paths: about 450 pages, whose
// cursors fall at random in the corpus's ties, hours and days, in both
// orders, with and without filters, five of them on bucket edges. 40
// queries of up to 21 pages (1,400 pages) cost 28 CPU-s, most of it
// DynamoDB Local's, and covered no other kind of case.
func TestPathsAgreeWithReference(t *testing.T) {
	t.Parallel() // its own table (or the shared corpus, read only); it waits on DynamoDB Local more than on the CPU
	c := loadCorpus(t)
	h := handlerFor(t, c.table, testddb.Endpoint(t))
	r := rand.New(rand.NewPCG(11, 12))
	for n := range 24 {
		span := time.Duration(r.Int64N(int64(80 * time.Hour)))
		from := now.Add(-73 * time.Hour).Add(time.Duration(r.Int64N(int64(75 * time.Hour)))).Truncate(time.Second)
		if n%5 == 0 { // exact bucket edges
			from = from.Truncate(time.Hour)
			span = span.Truncate(time.Hour) + time.Hour
		}
		to := from.Add(span + time.Millisecond)
		o := []Order{Asc, Desc}[r.IntN(2)]
		var typ, subject string
		if r.IntN(3) == 0 {
			typ = []string{"reading", "alarm", "heartbeat"}[r.IntN(3)]
		}
		if r.IntN(3) == 0 {
			subject = fmt.Sprintf("device/%d", r.IntN(5))
		}
		want := c.reference(from, to, typ, subject, o)
		limit := max(len(want)/8+1, []int{1, 7, 100, 333, 1000}[r.IntN(5)])
		q := url.Values{"source": {c.source}, "from": {from.Format(time.RFC3339Nano)}, "to": {to.Format(time.RFC3339Nano)},
			"order": {string(o)}, "limit": {fmt.Sprint(limit)}}
		if typ != "" {
			q.Set("type", typ)
		}
		if subject != "" {
			q.Set("subject", subject)
		}
		// by cost, each path forced, and consistent: the same events
		for _, mode := range []string{"", PathGSI, PathScatter, "consistent"} {
			qq := url.Values{}
			for k, v := range q {
				qq[k] = v
			}
			hh, wantPath := h, mode
			switch mode {
			case "consistent":
				qq.Set("consistent", "true")
				wantPath = PathScatter
			case PathGSI, PathScatter:
				hh = handlerOn(t, c.table, testddb.Endpoint(t), mode)
			}
			got, plans := pageThrough(t, hh, qq, 30)
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				d := firstDiff(got, want)
				t.Fatalf("query %d (%v, %q): got %d events, want %d\nfirst diff at %d: got %q, want %q", n, q, mode, len(got), len(want), d, got[max(0, d-2):min(d+3, len(got))], want[max(0, d-2):min(d+3, len(want))])
			}
			for _, p := range plans {
				if wantPath != "" && p.Path != wantPath || p.Requests < 1 || p.Reason == "" {
					t.Fatalf("plan %+v, want path %q", p, wantPath)
				}
			}
		}
	}
}

func firstDiff(a, b []string) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// TestNewestPageIsCheap: the newest 100 events of the last 24 hours cost a
// handful of requests, not one per hour of the range; and the path chosen
// by cost costs no more than either path forced.
func TestNewestPageIsCheap(t *testing.T) {
	c := loadCorpus(t)
	q := url.Values{"source": {c.source}, "from": {now.Add(-24 * time.Hour).Format(time.RFC3339)}, "to": {now.Format(time.RFC3339)}}
	cost := map[string]Plan{}
	for _, path := range []string{PathGSI, PathScatter, ""} {
		status, _, body := get(t, handlerOn(t, c.table, testddb.Endpoint(t), path), EventsRoute, q)
		var r EventsResponse
		if status != 200 || json.Unmarshal([]byte(body), &r) != nil || len(r.Events) != 100 {
			t.Fatalf("%q: %d %.300s", path, status, body)
		}
		cost[path] = r.Plan
		t.Logf("newest 100 of 24 h, %q: %+v", path, r.Plan)
	}
	// ~42 events an hour over 2 GSI shards: three or four hour buckets,
	// each two queries, plus the day's shard record and hour index; or the
	// day's 4 shards and the same.
	auto := cost[""]
	if auto.Requests > 6 || auto.Requests > min(cost[PathGSI].Requests, cost[PathScatter].Requests) || !strings.HasPrefix(auto.Reason, "cost: ") {
		t.Fatalf("by cost: %+v; gsi %+v, scatter %+v", auto, cost[PathGSI], cost[PathScatter])
	}
}

// TestConsistentReadYourWrites: an event written is returned at once by a
// consistent read.
func TestConsistentReadYourWrites(t *testing.T) {
	table := testddb.Table(t)
	client := testddb.Client(t, testddb.Endpoint(t))
	real := time.Now()
	in := ingest.New(ingest.DefaultConfig(table), client, ingest.Options{})
	h := checked(t, New(Config{Table: table}, client, Options{}))
	for i := range 5 {
		id := fmt.Sprintf("ryw-%d", i)
		body := fmt.Sprintf(`{"id":%q,"source":"ryw","type":"t","time":%q}`, id, real.Format(time.RFC3339Nano))
		req := events.APIGatewayV2HTTPRequest{Body: body, Headers: map[string]string{"content-type": "application/json"}, RawPath: "/v1/events"}
		req.RequestContext.HTTP.Method = "POST"
		if resp := send(t, in, req); resp.StatusCode != 202 {
			t.Fatalf("write: %d %s", resp.StatusCode, resp.Body)
		}
		status, _, out := get(t, h, EventsRoute, url.Values{"source": {"ryw"}, "consistent": {"true"}, "limit": {"1"}})
		if status != 200 || !strings.Contains(out, `"id":"`+id+`"`) || !strings.Contains(out, `"path":"scatter"`) {
			t.Fatalf("read after write %d: %d %s", i, status, out)
		}
	}
}

// TestGSIThrottledFallsBack: with every GSI query throttled, the default
// request is answered correctly by the scatter path, and the plan says why.
func TestGSIThrottledFallsBack(t *testing.T) {
	c := loadCorpus(t)
	p := faultproxy.For(t, testddb.Endpoint(t))
	p.SetRule(func(r faultproxy.Request) (*faultproxy.Fault, faultproxy.Hold) {
		if r.Op == "Query" && strings.Contains(string(r.Body), `"IndexName"`) {
			return faultproxy.Throttled, nil
		}
		return nil, nil
	})
	h := handlerOn(t, c.table, p.URL, PathGSI)
	from, to := now.Add(-30*time.Hour), now.Add(-20*time.Hour)
	q := url.Values{"source": {c.source}, "from": {from.Format(time.RFC3339)}, "to": {to.Format(time.RFC3339)}, "limit": {"250"}}
	got, plans := pageThrough(t, h, q, 20)
	if want := c.reference(from, to, "", "", Desc); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("fallback returned %d events, want %d", len(got), len(want))
	}
	for _, pl := range plans {
		if pl.Path != PathScatter || !strings.Contains(pl.Reason, "ProvisionedThroughputExceededException") {
			t.Fatalf("plan %+v", pl)
		}
	}
	if p.Faults.Load() == 0 {
		t.Fatal("no GSI query was throttled")
	}
}

// TestBadParametersAnswer400: every bad parameter and cursor is a 400
// naming it.
func TestBadParametersAnswer400(t *testing.T) {
	c := loadCorpus(t)
	h := handlerFor(t, c.table, testddb.Endpoint(t))
	// A real cursor to tamper with.
	base := url.Values{"source": {c.source}, "from": {now.Add(-2 * time.Hour).Format(time.RFC3339)}, "to": {now.Format(time.RFC3339)}, "limit": {"5"}}
	_, _, body := get(t, h, EventsRoute, base)
	var r EventsResponse
	if err := json.Unmarshal([]byte(body), &r); err != nil || r.NextCursor == "" {
		t.Fatalf("no cursor: %s", body)
	}
	cur := r.NextCursor
	flipped := []byte(cur)
	flipped[len(flipped)/2] ^= 1
	with := func(kv ...string) url.Values {
		q := url.Values{}
		for k, v := range base {
			q[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			if kv[i+1] == "<del>" {
				q.Del(kv[i])
			} else {
				q.Set(kv[i], kv[i+1])
			}
		}
		return q
	}
	cases := []struct {
		q     url.Values
		param string
	}{
		{with("source", "<del>"), "source"},
		{with("source", ""), "source"},
		{with("source", strings.Repeat("s", 257)), "source"},
		{with("from", "yesterday"), "from"},
		{with("to", "2026-13-01T00:00:00Z"), "to"},
		{with("from", now.Format(time.RFC3339), "to", now.Add(-time.Hour).Format(time.RFC3339)), "from"},
		{with("from", now.Add(-40*24*time.Hour).Format(time.RFC3339)), "to"},
		{with("limit", "0"), "limit"},
		{with("limit", "1001"), "limit"},
		{with("limit", "ten"), "limit"},
		{with("order", "sideways"), "order"},
		{with("consistent", "maybe"), "consistent"},
		{with("type", ""), "type"},
		{with("bogus", "1"), "bogus"},
		{with("cursor", "not-a-cursor"), "cursor"},
		{with("cursor", string(flipped)), "cursor"},
		{with("cursor", cur, "source", "other"), "cursor"},
		{with("cursor", cur, "order", "asc"), "cursor"},
		{with("cursor", cur, "type", "alarm"), "cursor"},
		{with("cursor", cur, "from", now.Add(-3*time.Hour).Format(time.RFC3339)), "cursor"},
	}
	for _, tc := range cases {
		status, _, body := get(t, h, EventsRoute, tc.q)
		var e struct{ Error string }
		if status != 400 || json.Unmarshal([]byte(body), &e) != nil || !strings.HasPrefix(e.Error, tc.param+": ") {
			t.Errorf("%v: %d %s, want 400 naming %q", tc.q, status, body, tc.param)
		}
	}
	// Repeated parameters are refused too.
	req := events.APIGatewayV2HTTPRequest{Version: "2.0", RawPath: EventsRoute, RawQueryString: "source=a&source=b"}
	req.RequestContext.HTTP.Method = "GET"
	if resp, _ := h.HTTP(context.Background(), req); resp.StatusCode != 400 || !strings.Contains(resp.Body, "source: ") {
		t.Errorf("repeated source: %d %s", resp.StatusCode, resp.Body)
	}
	// The untouched cursor still works, without repeating the range.
	if status, _, body := get(t, h, EventsRoute, url.Values{"source": {c.source}, "limit": {"5"}, "cursor": {cur}}); status != 200 {
		t.Errorf("valid cursor: %d %s", status, body)
	}
}

// TestDefaultRangePagesStayPut: paging with the default range keeps the
// first page's range even as the clock moves.
func TestDefaultRangePagesStayPut(t *testing.T) {
	c := loadCorpus(t)
	clock := now
	h := checked(t, New(Config{Table: c.table}, testddb.Client(t, testddb.Endpoint(t)), Options{Now: func() time.Time { return clock }}))
	q := url.Values{"source": {c.source}, "limit": {"10"}}
	var got []string
	for {
		status, _, body := get(t, h, EventsRoute, q)
		var r EventsResponse
		if status != 200 || json.Unmarshal([]byte(body), &r) != nil {
			t.Fatalf("%d %s", status, body)
		}
		for _, raw := range r.Events {
			var e struct{ ID, Time string }
			_ = json.Unmarshal(raw, &e)
			got = append(got, e.ID+"@"+e.Time)
		}
		if r.NextCursor == "" {
			break
		}
		q.Set("cursor", r.NextCursor)
		clock = clock.Add(10 * time.Minute)
	}
	if want := c.reference(now.Add(-time.Hour), now, "", "", Desc); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("got %d, want %d", len(got), len(want))
	}
}

func TestRoutes(t *testing.T) {
	h := handlerFor(t, "t", testddb.Endpoint(t))
	req := events.APIGatewayV2HTTPRequest{Version: "2.0", RawPath: "/v1/nothing"}
	req.RequestContext.HTTP.Method = "GET"
	if resp, _ := h.HTTP(context.Background(), req); resp.StatusCode != 404 {
		t.Errorf("unknown route: %d", resp.StatusCode)
	}
	req.RawPath = EventsRoute
	req.RequestContext.HTTP.Method = "DELETE"
	if resp, _ := h.HTTP(context.Background(), req); resp.StatusCode != 405 || resp.Headers["Allow"] != "GET" {
		t.Errorf("DELETE: %d", resp.StatusCode)
	}
}
