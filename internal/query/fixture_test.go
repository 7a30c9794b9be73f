package query

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/shardline/shardline/internal/ingest"
	"github.com/shardline/shardline/testkit/openapitest"
	"github.com/shardline/shardline/testkit/testddb"
)

func fixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "events", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestQueryFixtures runs the sample queries in events/ against the sample
// ingest requests, as Lambda would deliver them.
func TestQueryFixtures(t *testing.T) {
	table := testddb.Table(t)
	client := testddb.Client(t, testddb.Endpoint(t))
	in := ingest.New(ingest.DefaultConfig(table), client, ingest.Options{Now: func() time.Time { return now }})
	for _, f := range []string{"kinesis-batch.json", "api-ingest-v2.json", "rest-ingest-v1.json"} {
		out, err := in.Invoke(context.Background(), fixture(t, f))
		if err != nil {
			t.Fatal(err)
		}
		openapitest.CheckInvoke(t, openapitest.Ingest, fixture(t, f), out)
	}
	h := handlerFor(t, table, testddb.Endpoint(t))
	out, err := h.Invoke(context.Background(), fixture(t, "api-query-v2.json"))
	if err != nil {
		t.Fatal(err)
	}
	resp := out.(events.APIGatewayV2HTTPResponse)
	var r EventsResponse
	if resp.StatusCode != 200 || json.Unmarshal([]byte(resp.Body), &r) != nil {
		t.Fatalf("%d %s", resp.StatusCode, resp.Body)
	}
	ids := func(evs []json.RawMessage) (s []string) {
		for _, raw := range evs {
			var e struct{ ID string }
			_ = json.Unmarshal(raw, &e)
			s = append(s, e.ID)
		}
		return s
	}
	if got := strings.Join(ids(r.Events), ","); got != "ord-7f3aa0,ord-7f3a9d" || r.NextCursor == "" || r.Plan.Path != PathGSI {
		t.Fatalf("first page %s, cursor %q, plan %+v", got, r.NextCursor, r.Plan)
	}
	var req events.APIGatewayV2HTTPRequest
	_ = json.Unmarshal(fixture(t, "api-query-v2.json"), &req)
	req.RawQueryString += "&cursor=" + r.NextCursor
	resp, _ = h.HTTP(context.Background(), req)
	r = EventsResponse{}
	if resp.StatusCode != 200 || json.Unmarshal([]byte(resp.Body), &r) != nil || strings.Join(ids(r.Events), ",") != "ord-7f3a9c" || r.NextCursor != "" {
		t.Fatalf("second page %d %s", resp.StatusCode, resp.Body)
	}

	out, err = h.Invoke(context.Background(), fixture(t, "api-quarantine-v2.json"))
	if err != nil {
		t.Fatal(err)
	}
	resp = out.(events.APIGatewayV2HTTPResponse)
	var qr QuarantineResponse
	if resp.StatusCode != 200 || json.Unmarshal([]byte(resp.Body), &qr) != nil || len(qr.Records) != 3 {
		t.Fatalf("quarantine %d %s", resp.StatusCode, resp.Body)
	}
}

// TestRESTQuery: a REST API (v1) proxy request is served the same way.
func TestRESTQuery(t *testing.T) {
	c := loadCorpus(t)
	h := handlerFor(t, c.table, testddb.Endpoint(t))
	payload, _ := json.Marshal(events.APIGatewayProxyRequest{
		HTTPMethod: "GET", Path: "/v1/events", Resource: "/v1/events",
		MultiValueQueryStringParameters: map[string][]string{"source": {c.source}, "limit": {"3"}, "order": {"asc"},
			"from": {now.Add(-2 * time.Hour).Format(time.RFC3339)}, "to": {now.Format(time.RFC3339)}},
	})
	out, err := h.Invoke(context.Background(), payload)
	if err != nil {
		t.Fatal(err)
	}
	resp := out.(events.APIGatewayProxyResponse)
	var r EventsResponse
	if resp.StatusCode != 200 || json.Unmarshal([]byte(resp.Body), &r) != nil || len(r.Events) != 3 || r.NextCursor == "" {
		t.Fatalf("%d %s", resp.StatusCode, resp.Body)
	}
	want := c.reference(now.Add(-2*time.Hour), now, "", "", Asc)[:3]
	for i, raw := range r.Events {
		var e struct{ ID, Time string }
		_ = json.Unmarshal(raw, &e)
		if e.ID+"@"+e.Time != want[i] {
			t.Fatalf("event %d is %s, want %s", i, e.ID+"@"+e.Time, want[i])
		}
	}
}

// loading is the context a test loads its data in: a Lambda-like deadline
// far away. Without one the ingest handler takes the local server's 25 s,
// which a large load can outlast on a loaded machine.
func loading(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	return ctx
}
