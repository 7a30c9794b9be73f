package query

import (
	"encoding/json"
	"fmt"
	"net/url"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/shardline/shardline/internal/ingest"
	"github.com/shardline/shardline/pkg/bucketing"
	"github.com/shardline/shardline/testkit/faultproxy"
	"github.com/shardline/shardline/testkit/testddb"
)

// lookalikes are sources built to collide with each other under a naive
// key scheme, or to reach into another key space.
var lookalikes = []string{"a", "a#b", "a%23b", "a%b", "b", "a#2026-11-22#0", "E#a", "Q", "M#E#a", "G#a#2026-11-22T11#0", "a ", " a", "A"}

// TestNoQueryCrossesSources: events of look-alike sources, and filter values
// that look like expressions, never bring back another source's events, on
// either path. Every request the reader sends carries only its fixed
// expressions: user input travels in expression attribute values alone.
func TestNoQueryCrossesSources(t *testing.T) {
	table := testddb.Table(t)
	p := faultproxy.For(t, testddb.Endpoint(t))
	var mu sync.Mutex
	var bodies [][]byte
	p.SetRule(func(r faultproxy.Request) (*faultproxy.Fault, faultproxy.Hold) {
		mu.Lock()
		bodies = append(bodies, r.Body)
		mu.Unlock()
		return nil, nil
	})
	in := ingest.New(ingest.DefaultConfig(table), testddb.Client(t, p.URL), ingest.Options{Now: func() time.Time { return now }})
	var evs []string
	for i, src := range lookalikes {
		for j := range 3 {
			b, _ := json.Marshal(map[string]any{"id": fmt.Sprintf("%d-%d", i, j), "source": src, "type": "t", "subject": "s",
				"time": now.Add(-time.Duration(10+i+j) * time.Minute).Format(time.RFC3339)})
			evs = append(evs, string(b))
		}
	}
	req := events.APIGatewayV2HTTPRequest{Body: "[" + strings.Join(evs, ",") + "]", Headers: map[string]string{"content-type": "application/json"}, RawPath: "/v1/events"}
	req.RequestContext.HTTP.Method = "POST"
	if resp := send(t, in, req); resp.StatusCode != 202 || !strings.Contains(resp.Body, fmt.Sprintf(`"accepted":%d`, len(evs))) {
		t.Fatalf("%d %s", resp.StatusCode, resp.Body)
	}
	h := handlerFor(t, table, p.URL)
	for _, src := range lookalikes {
		for _, q := range []url.Values{
			{"source": {src}},
			{"source": {src}, "consistent": {"true"}},
			{"source": {src}, "type": {"t OR 1=1"}},
			{"source": {src}, "type": {":pk"}, "consistent": {"true"}},
			{"source": {src}, "subject": {"s) OR (#pk = :pk"}},
			{"source": {src}, "type": {"t"}, "subject": {"s"}, "order": {"asc"}},
		} {
			status, _, body := get(t, h, EventsRoute, q)
			var r EventsResponse
			if status != 200 || json.Unmarshal([]byte(body), &r) != nil {
				t.Fatalf("%v: %d %s", q, status, body)
			}
			filtered := q.Get("type") != "" && q.Get("type") != "t" || q.Get("subject") != "" && q.Get("subject") != "s"
			if want := 3; filtered {
				want = 0
				if len(r.Events) != want {
					t.Fatalf("%v returned %d events: a filter value acted as an expression", q, len(r.Events))
				}
			} else if len(r.Events) != want {
				t.Fatalf("%v returned %d events, want %d", q, len(r.Events), want)
			}
			for _, raw := range r.Events {
				var e struct{ Source string }
				json.Unmarshal(raw, &e)
				if e.Source != src {
					t.Fatalf("a query of %q returned an event of %q", src, e.Source)
				}
			}
		}
	}
	// Every expression sent is one of the reader's and writer's constants.
	allowed := map[string]bool{
		"#pk = :pk AND #sk BETWEEN :lo AND :hi":        true,
		"#type = :type":                                true,
		"#subject = :subject":                          true,
		"#type = :type AND #subject = :subject":        true,
		"attribute_not_exists(#pk)":                    true,
		"#v = :v":                                      true,
		"#pk, #sk, #ev":                                true, // a lean GSI page fetching its events
		"#pk = :pk":                                    true, // a day's shard record and hour index
		"#pk = :pk AND #sk BETWEEN :hours AND :shards": true, // the same, without the day's demand reports
		"attribute_not_exists(#e) OR #e <= :e":         true, // the hour index's TTL, only ever moved later
		"#h, #e":                                       true, // the hour index read before a mark
	}
	names := map[string]bool{"pk": true, "sk": true, "gpk": true, "type": true, "subject": true, "ver": true, "ev": true, "hrs": true, "exp": true}
	for h := range 24 {
		names[fmt.Sprintf("n%02d", h)] = true // the hour index's hints
	}
	n := 0
	for _, b := range bodies {
		var in struct {
			KeyConditionExpression, FilterExpression, ConditionExpression, ProjectionExpression string
			ExpressionAttributeNames                                                            map[string]string
		}
		if err := json.Unmarshal(b, &in); err != nil {
			t.Fatal(err)
		}
		for _, expr := range []string{in.KeyConditionExpression, in.FilterExpression, in.ConditionExpression, in.ProjectionExpression} {
			if expr != "" && !allowed[expr] {
				t.Fatalf("request carries expression %q", expr)
			}
			if expr != "" {
				n++
			}
		}
		for _, v := range in.ExpressionAttributeNames {
			if !names[v] {
				t.Fatalf("request names attribute %q", v)
			}
		}
	}
	if n < len(lookalikes)*6 {
		t.Fatalf("only %d expressions seen", n)
	}
}

// TestForgedCursorStaysInItsSource: a cursor forged for another source (the
// default key is derived from the table name, which an attacker may know)
// reads only the source named in the request.
func TestForgedCursorStaysInItsSource(t *testing.T) {
	c := loadCorpus(t)
	h := handlerFor(t, c.table, testddb.Endpoint(t))
	keys := NewKeys("", c.table)
	p := Params{Source: "someone-else", Order: Desc, From: now.Add(-time.Hour), To: now}
	forged := keys.Encode(next(Events, &p, now.Add(-time.Minute), "x"))
	status, _, body := get(t, h, EventsRoute, url.Values{"source": {"someone-else"}, "cursor": {forged}})
	var r EventsResponse
	if status != 200 || json.Unmarshal([]byte(body), &r) != nil || len(r.Events) != 0 {
		t.Fatalf("%d %s", status, body)
	}
	status, _, _ = get(t, h, EventsRoute, url.Values{"source": {c.source}, "cursor": {forged}})
	if status != 400 {
		t.Fatalf("a cursor of another source was accepted: %d", status)
	}
	// Keys of every look-alike source decode to that source, in the events space.
	for _, src := range lookalikes {
		k, err := bucketing.ParsePK(bucketing.Stream{Space: bucketing.Events, Source: src}.PK("2026-11-22", 0))
		if err != nil || k.Source != src || k.Space != bucketing.Events {
			t.Fatalf("%q: %+v %v", src, k, err)
		}
	}
}

// TestCursorRangeIsChecked: a validly signed cursor (replayed, or signed by
// someone who holds the key) carrying a range far over 31 days is refused
// with a 400 naming the cursor, on both routes, before anything is
// allocated for the range.
func TestCursorRangeIsChecked(t *testing.T) {
	const secret = "test-cursor-key"
	table := testddb.Table(t)
	keys := NewKeys(secret, table)
	h := checked(t, New(Config{Table: table, CursorSecret: secret}, testddb.Client(t, testddb.Endpoint(t)), Options{Now: func() time.Time { return now }}))
	huge := Params{Source: "s", Order: Desc, From: time.Unix(0, 0).UTC(), To: time.Date(2262, 4, 1, 0, 0, 0, 0, time.UTC)}
	inverted := Params{Source: "s", Order: Desc, From: now, To: now.Add(-time.Hour)}
	for _, tc := range []struct {
		route string
		kind  Kind
		p     Params
		q     url.Values
	}{
		{EventsRoute, Events, huge, url.Values{"source": {"s"}}},
		{EventsRoute, Events, huge, url.Values{"source": {"s"}, "consistent": {"true"}}},
		{QuarantineRoute, Quarantine, Params{Order: Desc, From: huge.From, To: huge.To}, url.Values{}},
		{EventsRoute, Events, inverted, url.Values{"source": {"s"}}},
	} {
		tc.q.Set("cursor", keys.Encode(next(tc.kind, &tc.p, tc.p.To.Add(-time.Hour), "x")))
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		status, _, body := get(t, h, tc.route, tc.q)
		runtime.ReadMemStats(&after)
		var e struct{ Error string }
		if status != 400 || json.Unmarshal([]byte(body), &e) != nil || !strings.HasPrefix(e.Error, "cursor: ") {
			t.Errorf("%s %v: %d %.200s, want 400 naming the cursor", tc.route, tc.q, status, body)
		}
		if n := after.TotalAlloc - before.TotalAlloc; n > 8<<20 {
			t.Errorf("%s %v: %d bytes allocated", tc.route, tc.q, n)
		}
		if _, err := ParseParams(tc.kind, tc.q.Encode(), now, keys); err == nil {
			t.Errorf("ParseParams(%v) accepted the cursor", tc.q)
		}
	}
}
