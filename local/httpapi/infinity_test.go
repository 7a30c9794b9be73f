package httpapi_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shardline/shardline/testkit/openapitest"
)

// infinityMaxPages is the Infinity datasource's default page limit.
const infinityMaxPages = 5

// infinityPage is one page as Grafana's Infinity datasource reads it in
// cursor pagination mode: the rows under rootSelector, and the cursor
// extracted from the field next_cursor.
type infinityPage struct {
	rows   []json.RawMessage
	cursor string
}

// infinity pages route the way Grafana's Infinity datasource does in its
// cursor pagination mode (backend parser, query-string cursor): it asks
// with q, extracts next_cursor from the answer, and asks again with
// cursor=<that> until the extracted value is the empty string. Like
// Infinity, it fails the whole query when the field cannot be extracted
// ("error while extracting the cursor value"), and it never sends an
// empty cursor. It returns every page's rows, in order, and the pages.
func infinity(t *testing.T, client *http.Client, base, route string, q url.Values, rootSelector string, maxPages int) ([]json.RawMessage, int) {
	t.Helper()
	var rows []json.RawMessage
	cursor := ""
	for page := 0; ; page++ {
		if page >= maxPages {
			t.Fatalf("GET %s: still a next_cursor after %d pages", route, maxPages)
		}
		pq := url.Values{}
		for k, v := range q {
			pq[k] = slices.Clone(v)
		}
		if cursor != "" {
			pq.Set("cursor", cursor)
		}
		p := infinityGet(t, client, base+route+"?"+pq.Encode(), rootSelector)
		rows = append(rows, p.rows...)
		if p.cursor == "" {
			return rows, page + 1
		}
		cursor = p.cursor
	}
}

// infinityGet asks for one page and reads it as Infinity does.
func infinityGet(t *testing.T, client *http.Client, u, rootSelector string) infinityPage {
	t.Helper()
	resp, err := client.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s %v", u, resp.StatusCode, body, err)
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(body, &doc); err != nil {
		t.Fatalf("GET %s: not a JSON object: %v", u, err)
	}
	var p infinityPage
	if err := json.Unmarshal(doc[rootSelector], &p.rows); err != nil {
		t.Fatalf("GET %s: no rows under %q: %s", u, rootSelector, body)
	}
	raw, ok := doc["next_cursor"]
	if !ok {
		t.Fatalf("GET %s: Infinity fails the query with \"error while extracting the cursor value\": the answer has no next_cursor: %.300s", u, body)
	}
	if err := json.Unmarshal(raw, &p.cursor); err != nil {
		t.Fatalf("GET %s: next_cursor is %s, not a string", u, raw)
	}
	return p
}

// TestInfinityPagesEveryListing: each listing route (/v1/events,
// /v1/quarantine, /v1/sources), served by the real handlers on DynamoDB
// Local, pages to its end the way Grafana's Infinity datasource does —
// an empty answer, a one-page answer and an answer of several pages —
// and returns every item once.
func TestInfinityPagesEveryListing(t *testing.T) {
	base := serve(t)
	client := openapitest.Client(t, openapitest.Any)
	now := time.Now().UTC()
	from, to := fmt.Sprint(now.Add(-time.Hour).UnixMilli()), fmt.Sprint(now.Add(time.Minute).UnixMilli())

	// 7 events of one source, one of each of 4 others, and 5 invalid ones.
	var batch []string
	var wantIDs []string
	for i := range 7 {
		id := fmt.Sprintf("e-%d", i)
		wantIDs = append(wantIDs, id)
		batch = append(batch, fmt.Sprintf(`{"id":%q,"source":"grafana/orders","type":"t","time":%q}`,
			id, now.Add(-time.Duration(7-i)*time.Minute).Format(time.RFC3339)))
	}
	wantSources := []string{"grafana/orders"}
	for i := range 4 {
		src := fmt.Sprintf("grafana/s%d", i)
		wantSources = append(wantSources, src)
		batch = append(batch, fmt.Sprintf(`{"id":"x","source":%q,"type":"t","time":%q}`, src, now.Add(-time.Minute).Format(time.RFC3339)))
	}
	for i := range 5 {
		batch = append(batch, fmt.Sprintf(`{"id":"bad-%d","source":"grafana/orders"}`, i)) // no type: quarantined
	}
	resp, err := client.Post(base+"/v1/events", "application/json", bytes.NewReader([]byte("["+strings.Join(batch, ",")+"]")))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted || !strings.Contains(string(body), `"accepted":11,`) {
		t.Fatalf("POST: %d %s", resp.StatusCode, body)
	}
	slices.Sort(wantSources)

	field := func(rows []json.RawMessage, name string) []string {
		var out []string
		for _, r := range rows {
			var m map[string]any
			_ = json.Unmarshal(r, &m)
			s, _ := m[name].(string)
			out = append(out, s)
		}
		return out
	}
	for _, c := range []struct {
		name, route, root, field string
		q                        url.Values
		want                     []string // nil: only the count matters
		count, pages             int
	}{
		{"events, several pages", "/v1/events", "events", "id", url.Values{"source": {"grafana/orders"}, "from": {from}, "to": {to}, "limit": {"3"}, "order": {"asc"}}, wantIDs, 7, 3},
		{"events, one page", "/v1/events", "events", "id", url.Values{"source": {"grafana/orders"}, "from": {from}, "to": {to}, "limit": {"100"}, "order": {"asc"}}, wantIDs, 7, 1},
		{"events, exactly full pages", "/v1/events", "events", "id", url.Values{"source": {"grafana/orders"}, "from": {from}, "to": {to}, "limit": {"7"}, "order": {"asc"}}, wantIDs, 7, 0},
		{"events, none", "/v1/events", "events", "id", url.Values{"source": {"grafana/nobody"}, "from": {from}, "to": {to}}, []string{}, 0, 1},
		{"quarantine, several pages", "/v1/quarantine", "records", "raw", url.Values{"from": {from}, "to": {to}, "limit": {"2"}}, nil, 5, 3},
		{"quarantine, one page", "/v1/quarantine", "records", "raw", url.Values{"from": {from}, "to": {to}}, nil, 5, 1},
		{"quarantine, none", "/v1/quarantine", "records", "raw", url.Values{"from": {fmt.Sprint(now.Add(-30 * time.Hour).UnixMilli())}, "to": {fmt.Sprint(now.Add(-29 * time.Hour).UnixMilli())}}, []string{}, 0, 1},
		{"sources, several pages", "/v1/sources", "sources", "source", url.Values{"from": {from}, "to": {to}, "limit": {"2"}}, wantSources, 5, 3},
		{"sources, one page", "/v1/sources", "sources", "source", url.Values{"from": {from}, "to": {to}}, wantSources, 5, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			rows, pages := infinity(t, client, base, c.route, c.q, c.root, infinityMaxPages)
			got := field(rows, c.field)
			distinct := slices.Compact(slices.Sorted(slices.Values(got)))
			if len(got) != c.count || len(distinct) != len(got) || (c.want != nil && !slices.Equal(got, c.want)) {
				t.Fatalf("%d rows %q in %d pages; want %d %q", len(got), got, pages, c.count, c.want)
			}
			// A page that ends exactly at the last item may still carry a
			// cursor, whose page is then empty: either is the contract.
			if c.pages > 0 && pages != c.pages {
				t.Fatalf("%d pages; want %d", pages, c.pages)
			}
		})
	}
}
