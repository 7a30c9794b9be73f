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
	"github.com/shardline/shardline/testkit/testddb"
)

// TestLeanGSI: with the Lean projection the GSI carries no events; its pages
// fetch them from the table and return exactly what the scatter path does.
func TestLeanGSI(t *testing.T) {
	table := fmt.Sprintf("lean-%d", time.Now().UnixNano())
	client := testddb.Client(t, testddb.Endpoint(t))
	if err := schema.CreateWith(context.Background(), client, table, schema.Lean); err != nil {
		t.Fatal(err)
	}
	in := ingest.New(ingest.DefaultConfig(table), client, ingest.Options{Now: func() time.Time { return now }})
	var evs []json.RawMessage
	for i := range 600 {
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
