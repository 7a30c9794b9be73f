package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shardline/shardline/local/devserver"
	"github.com/shardline/shardline/testkit/openapitest"
	"github.com/shardline/shardline/testkit/testddb"
)

// dashboardFile is the Grafana dashboard shipped for the Infinity
// datasource (docs/grafana.md).
const dashboardFile = "../../deploy/grafana/shardline.json"

// infinityTarget is what the test reads of an Infinity query: its URL, how
// it is paged, and what its panel reads of the answer.
type infinityTarget struct {
	RefID        string `json:"refId"`
	Type         string `json:"type"`
	Source       string `json:"source"`
	Parser       string `json:"parser"`
	URL          string `json:"url"`
	RootSelector string `json:"root_selector"`
	Columns      []struct {
		Selector string `json:"selector"`
		Type     string `json:"type"`
	} `json:"columns"`
	PaginationMode  string `json:"pagination_mode"`
	MaxPages        int    `json:"pagination_max_pages"`
	CursorField     string `json:"pagination_param_cursor_field_name"`
	CursorFieldType string `json:"pagination_param_cursor_field_type"`
	CursorPath      string `json:"pagination_param_cursor_extraction_path"`
}

// dashboardTargets lists every Infinity query of the dashboard, named by
// where it is: each panel's targets and each query variable's.
func dashboardTargets(t *testing.T) map[string]infinityTarget {
	t.Helper()
	raw, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Templating struct {
			List []struct {
				Name  string          `json:"name"`
				Type  string          `json:"type"`
				Query json.RawMessage `json:"query"`
			} `json:"list"`
		} `json:"templating"`
		Panels []struct {
			Title   string           `json:"title"`
			Targets []infinityTarget `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	out := map[string]infinityTarget{}
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		var q struct {
			Infinity *infinityTarget `json:"infinityQuery"`
		}
		if err := json.Unmarshal(v.Query, &q); err != nil || q.Infinity == nil {
			t.Fatalf("variable %s: not an Infinity query: %s", v.Name, v.Query)
		}
		out["variable "+v.Name] = *q.Infinity
	}
	for _, p := range d.Panels {
		if len(p.Targets) == 0 {
			t.Fatalf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			out["panel "+p.Title+" "+tg.RefID] = tg
		}
	}
	return out
}

// grafanaVars substitutes variables in a query's URL as Grafana does:
// ${__from} and ${__to} are the time range in epoch milliseconds,
// ${name} a template variable's value, ${name:percentencode} its value
// percent-encoded. A variable it does not know fails the test.
func grafanaVars(t *testing.T, s string, from, to time.Time, vars map[string]string) string {
	t.Helper()
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		j := strings.IndexByte(s[i:], '}')
		if j < 0 {
			t.Fatalf("unclosed variable in %q", s)
		}
		b.WriteString(s[:i])
		name, format, _ := strings.Cut(s[i+2:i+j], ":")
		var v string
		switch name {
		case "__from":
			v = fmt.Sprint(from.UnixMilli())
		case "__to":
			v = fmt.Sprint(to.UnixMilli())
		default:
			val, ok := vars[name]
			if !ok {
				t.Fatalf("the dashboard's URL %q uses ${%s}, which is no variable of it", s, name)
			}
			v = val
		}
		switch format {
		case "":
		case "percentencode":
			v = url.QueryEscape(v)
		default:
			t.Fatalf("variable format %q in %q: not one this test knows", format, s)
		}
		b.WriteString(v)
		s = s[i+j+1:]
	}
}

// infinityRows are the rows a backend-parser root selector picks out of
// an answer. A plain field name picks that field's array; the one JSONata
// expression the dashboard uses (counts by type, flattened to one row a
// point with its series' type) is evaluated here as JSONata would. A
// selector not listed fails the test: add its meaning here when the
// dashboard gains one.
func infinityRows(t *testing.T, selector string, doc map[string]json.RawMessage) []map[string]any {
	t.Helper()
	var rows []map[string]any
	switch selector {
	case `series.($type := type; points.{"t": t, "count": count, "type": $type})`:
		var series []struct {
			Type   *string          `json:"type"`
			Points []map[string]any `json:"points"`
		}
		if err := json.Unmarshal(doc["series"], &series); err != nil {
			t.Fatalf("series: %v", err)
		}
		for _, s := range series {
			for _, p := range s.Points {
				row := map[string]any{"t": p["t"], "count": p["count"]}
				if s.Type != nil {
					row["type"] = *s.Type
				}
				rows = append(rows, row)
			}
		}
	default:
		if strings.ContainsAny(selector, ".($[{ ") {
			t.Fatalf("root selector %q: not one this test can evaluate", selector)
		}
		if err := json.Unmarshal(doc[selector], &rows); err != nil {
			t.Fatalf("root selector %q: the answer has no array of objects there: %v", selector, err)
		}
	}
	return rows
}

// checkColumns fails the test unless every row has each column the panel
// reads, of the column's type.
func checkColumns(t *testing.T, where string, tg infinityTarget, rows []map[string]any) {
	t.Helper()
	for i, r := range rows {
		for _, c := range tg.Columns {
			v, ok := r[c.Selector]
			ok = ok && v != nil
			switch c.Type {
			case "timestamp":
				s, isString := v.(string)
				_, err := time.Parse(time.RFC3339Nano, s)
				ok = ok && isString && err == nil
			case "number":
				_, ok = v.(float64)
			case "string":
				// An event's subject is optional: an empty cell, as Grafana shows it.
				ok = ok || c.Selector == "subject"
			default:
				t.Fatalf("%s: column %q of type %q", where, c.Selector, c.Type)
			}
			if !ok {
				t.Fatalf("%s: row %d has no %s %q: %v", where, i, c.Type, c.Selector, r)
			}
		}
	}
}

// TestGrafanaDashboard: every URL the shipped Grafana dashboard sends,
// its variables substituted as Grafana substitutes them, is answered by
// the real handlers on DynamoDB Local with what its panel reads: the rows
// under its root selector, each with the columns the panel shows. A query
// with cursor pagination is paged the way Infinity pages it, to its end
// (next_cursor ""), and returns every event of the range once.
//
// It does so for the /v1/... routes and for a tenant's (the routes
// variable), whose panels hold only the tenant's sources.
func TestGrafanaDashboard(t *testing.T) {
	base := serveTenants(t, `{"grafana": {"sources": ["grafana/"]}}`)
	client := openapitest.Client(t, openapitest.Any)
	now := time.Now().UTC()
	from, to := now.Add(-24*time.Hour), now.Add(time.Minute)

	// 250 events of one source, three pages of the events panel's 100; one
	// event of another.
	const source = "grafana/checkout #1"
	var batch []string
	var wantIDs []string
	for i := range 250 {
		id := fmt.Sprintf("g-%03d", i)
		wantIDs = append(wantIDs, id)
		batch = append(batch, fmt.Sprintf(`{"id":%q,"source":%q,"type":"t%d","time":%q}`,
			id, source, i%3, now.Add(-time.Duration(i)*time.Minute).Format(time.RFC3339)))
	}
	batch = append(batch, fmt.Sprintf(`{"id":"x","source":"grafana/other","type":"t","subject":"s","time":%q}`, now.Add(-time.Hour).Format(time.RFC3339)))
	batch = append(batch, fmt.Sprintf(`{"id":"y","source":"shop/not-the-tenants","type":"t","time":%q}`, now.Add(-time.Hour).Format(time.RFC3339)))
	resp, err := client.Post(base+"/v1/events", "application/json", bytes.NewReader([]byte("["+strings.Join(batch, ",")+"]")))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted || !strings.Contains(string(body), `"accepted":252,`) {
		t.Fatalf("POST: %d %s", resp.StatusCode, body)
	}
	vars := map[string]string{"source": source}
	waitCounted(t, client, base, source, 250)

	targets := dashboardTargets(t)
	for _, want := range []string{"/v1/counts", "/v1/events", "/v1/sources"} {
		if !slices.ContainsFunc(slices.Collect(mapValues(targets)), func(tg infinityTarget) bool {
			return strings.HasPrefix(strings.Replace(tg.URL, "${routes}", "/v1", 1), want+"?")
		}) {
			t.Errorf("the dashboard sends nothing to %s", want)
		}
	}
	for _, routes := range []string{"/v1", "/v1/tenants/grafana"} {
		vars["routes"] = routes
		dashboardAt(t, client, base, routes, targets, from, to, vars, source, wantIDs)
	}
}

// dashboardAt checks every target of the dashboard with its routes
// variable at routes.
func dashboardAt(t *testing.T, client *http.Client, base, routes string, targets map[string]infinityTarget, from, to time.Time,
	vars map[string]string, source string, wantIDs []string) {
	for where, tg := range targets {
		t.Run(routes+" "+where, func(t *testing.T) {
			if tg.Type != "json" || tg.Source != "url" || tg.Parser != "backend" {
				t.Fatalf("type %q, source %q, parser %q; want json, url, backend (the parser that pages, and runs alerts)", tg.Type, tg.Source, tg.Parser)
			}
			u, err := url.Parse(grafanaVars(t, tg.URL, from, to, vars))
			if err != nil || !strings.HasPrefix(u.Path, "/v1/") || u.Host != "" {
				t.Fatalf("URL %q: want a path under /v1/, which Infinity appends to the datasource's URL: %v", tg.URL, err)
			}
			var rows []map[string]any
			pages := 1
			switch tg.PaginationMode {
			case "cursor":
				if tg.CursorField != "cursor" || tg.CursorFieldType != "query" || tg.CursorPath != "next_cursor" || tg.MaxPages < 1 {
					t.Fatalf("cursor pagination: field %q (%s), extraction path %q, %d pages; want cursor (query), next_cursor", tg.CursorField, tg.CursorFieldType, tg.CursorPath, tg.MaxPages)
				}
				var raws []json.RawMessage
				raws, pages = infinity(t, client, base, u.Path, u.Query(), tg.RootSelector, tg.MaxPages)
				for _, r := range raws {
					var row map[string]any
					if err := json.Unmarshal(r, &row); err != nil {
						t.Fatal(err)
					}
					rows = append(rows, row)
				}
			case "", "none":
				resp, err := client.Get(base + u.String())
				if err != nil {
					t.Fatal(err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				var doc map[string]json.RawMessage
				if resp.StatusCode != 200 || json.Unmarshal(body, &doc) != nil {
					t.Fatalf("GET %s: %d %.300s", u, resp.StatusCode, body)
				}
				rows = infinityRows(t, tg.RootSelector, doc)
			default:
				t.Fatalf("pagination mode %q", tg.PaginationMode)
			}
			if len(rows) == 0 {
				t.Fatalf("GET %s: no rows under %q", u, tg.RootSelector)
			}
			checkColumns(t, u.String(), tg, rows)
			t.Logf("GET %s: %d rows in %d pages", u, len(rows), pages)

			switch strings.TrimPrefix(u.Path, routes) {
			case "/events":
				var ids []string
				for _, r := range rows {
					ids = append(ids, r["id"].(string))
				}
				slices.Sort(ids)
				if !slices.Equal(ids, wantIDs) || pages < 3 {
					t.Errorf("the events panel shows %d events in %d pages; want all %d, each once, in 3 pages or more", len(ids), pages, len(wantIDs))
				}
			case "/counts":
				total := map[string]float64{}
				for _, r := range rows {
					total[r["type"].(string)] += r["count"].(float64)
				}
				if len(total) != 3 || total["t0"]+total["t1"]+total["t2"] != 250 {
					t.Errorf("the counts panel's series: %v; want 250 events in types t0, t1, t2", total)
				}
			case "/sources":
				var names []string
				for _, r := range rows {
					names = append(names, r["source"].(string))
				}
				if !slices.Contains(names, source) || !slices.Contains(names, "grafana/other") {
					t.Errorf("the sources: %q; want %q and grafana/other", names, source)
				}
				if tenant := routes != "/v1"; slices.Contains(names, "shop/not-the-tenants") == tenant {
					t.Errorf("the sources of %s: %q; want shop/not-the-tenants only on /v1", routes, names)
				}
			}
		})
	}
}

// serveTenants is serve with tenants (devserver.Options.Tenants).
func serveTenants(t *testing.T, tenants string) string {
	t.Helper()
	base, stop, err := devserver.Serve(context.Background(), devserver.Options{
		Addr:     "127.0.0.1:0",
		Endpoint: testddb.Endpoint(t),
		Table:    fmt.Sprintf("grafana-%d", time.Now().UnixNano()),
		Getenv:   func(string) string { return "" },
		Out:      io.Discard,
		Tenants:  tenants,
	})
	if err != nil {
		t.Fatalf("devserver: %v", err)
	}
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("devserver: %v", err)
		}
	})
	return base
}

// waitCounted waits until the counts of source's last 24 hours add up to
// n: the counter trails the writes (by a second or so locally).
func waitCounted(t *testing.T, client *http.Client, base, source string, n int) {
	t.Helper()
	for tries := 0; ; tries++ {
		resp, err := client.Get(base + "/v1/counts?source=" + url.QueryEscape(source))
		if err != nil {
			t.Fatal(err)
		}
		var c struct {
			Series []struct {
				Points []struct{ Count int } `json:"points"`
			} `json:"series"`
		}
		err = json.NewDecoder(resp.Body).Decode(&c)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		got := 0
		for _, s := range c.Series {
			for _, p := range s.Points {
				got += p.Count
			}
		}
		if got == n {
			return
		}
		if tries == 300 {
			t.Fatalf("counts of %s: %d of %d events after 300 tries", source, got, n)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func mapValues[V any](m map[string]V) func(func(V) bool) {
	return func(yield func(V) bool) {
		for _, v := range m {
			if !yield(v) {
				return
			}
		}
	}
}
