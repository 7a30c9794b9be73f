package query

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/shardline/shardline/internal/ingest"
	"github.com/shardline/shardline/internal/schema"
	"github.com/shardline/shardline/testkit/faultproxy"
	"github.com/shardline/shardline/testkit/testddb"
)

// TestLeanGSI: with the Lean projection the GSI carries no events; its pages
// fetch them from the table and return exactly what the scatter path does.
func TestLeanGSI(t *testing.T) {
	table := loadLean(t, 600)
	h := handlerFor(t, table, testddb.Endpoint(t))
	for _, q := range []url.Values{
		{"source": {"lean"}, "limit": {"70"}, "from": {now.Add(-3 * time.Hour).Format(time.RFC3339)}, "to": {now.Format(time.RFC3339)}},
		{"source": {"lean"}, "limit": {"33"}, "type": {"b"}, "order": {"asc"}, "from": {now.Add(-3 * time.Hour).Format(time.RFC3339)}, "to": {now.Format(time.RFC3339)}},
	} {
		qq := url.Values{"consistent": {"true"}}
		for k, v := range q {
			qq[k] = v
		}
		gsi, plans := pageThrough(t, h, q, 30)
		scatter, _ := pageThrough(t, h, qq, 30)
		if len(gsi) == 0 || strings.Join(gsi, ",") != strings.Join(scatter, ",") {
			t.Fatalf("%v: lean GSI %d events, scatter %d", q, len(gsi), len(scatter))
		}
		for _, p := range plans {
			if p.Path != PathGSI {
				t.Fatalf("plan %+v", p)
			}
		}
	}
}

// TestLeanGSIMissIsReadAgain: an eventually consistent BatchGetItem that
// does not find an event the index already lists (a replica behind; made
// by faultproxy, since DynamoDB Local is always consistent) neither drops
// it from its page nor lets the cursor step past it: the page reads the
// missed events again, strongly consistent, and paging returns every event
// once, as the scatter path does.
func TestLeanGSIMissIsReadAgain(t *testing.T) {
	table := loadLean(t, 120)
	p := faultproxy.For(t, testddb.Endpoint(t))
	p.SetRule(func(r faultproxy.Request) (*faultproxy.Fault, faultproxy.Hold) {
		if r.Op != "BatchGetItem" {
			return nil, nil
		}
		return nil, func(item map[string]json.RawMessage) bool {
			sk := string(item[schema.SK]) // {"S":"<time>#<id>"}
			return strings.HasSuffix(sk, `#l-7"}`) || strings.HasSuffix(sk, `#l-30"}`)
		}
	})
	h := handlerOn(t, table, p.URL, PathGSI)
	query := func(more ...string) url.Values {
		q := url.Values{"source": {"lean"}, "limit": {"25"}, "from": {now.Add(-3 * time.Hour).Format(time.RFC3339)}, "to": {now.Format(time.RFC3339)}}
		for i := 0; i < len(more); i += 2 {
			q.Set(more[i], more[i+1])
		}
		return q
	}
	gsi, plans := pageThrough(t, h, query(), 30)
	if p.Held.Load() < 2 {
		t.Fatalf("the proxy left out %d events, want both l-7 and l-30 at least once", p.Held.Load())
	}
	scatter, _ := pageThrough(t, handlerFor(t, table, testddb.Endpoint(t)), query("consistent", "true"), 30)
	// l-0, at now, is past the range's end: 119 events.
	if len(scatter) != 119 || strings.Join(gsi, ",") != strings.Join(scatter, ",") {
		t.Fatalf("lean GSI %d events, scatter %d, want the same 119", len(gsi), len(scatter))
	}
	for _, pl := range plans {
		if pl.Path != PathGSI {
			t.Fatalf("plan %+v", pl)
		}
	}
}

// loadLean stores n events of source "lean", 17 seconds apart back from
// now, of types a and b in turn, in a new table with the Lean projection.
func loadLean(t *testing.T, n int) string {
	t.Helper()
	table := fmt.Sprintf("lean-%d", time.Now().UnixNano())
	client := testddb.Client(t, testddb.Endpoint(t))
	if err := schema.CreateWith(context.Background(), client, table, schema.Lean); err != nil {
		t.Fatal(err)
	}
	in := ingest.New(ingest.DefaultConfig(table), client, ingest.Options{Now: func() time.Time { return now }})
	var evs []json.RawMessage
	for i := range n {
		b, _ := json.Marshal(map[string]any{"id": fmt.Sprintf("l-%d", i), "source": "lean", "type": []string{"a", "b"}[i%2],
			"time": now.Add(-time.Duration(i) * 17 * time.Second).Format(time.RFC3339Nano), "data": map[string]any{"i": i}})
		evs = append(evs, b)
	}
	var kev events.KinesisEvent
	for i := 0; i < len(evs); i += 50 {
		b, _ := json.Marshal(evs[i : i+50])
		kev.Records = append(kev.Records, events.KinesisEventRecord{EventSource: "aws:kinesis", Kinesis: events.KinesisRecord{Data: b, SequenceNumber: fmt.Sprint(i)}})
	}
	if resp, err := in.Kinesis(loading(t), kev); err != nil || len(resp.BatchItemFailures) > 0 {
		t.Fatalf("%v %v", err, resp.BatchItemFailures)
	}
	return table
}
