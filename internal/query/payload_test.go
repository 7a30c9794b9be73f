package query

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/url"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/shardline/shardline/internal/cloudevent"
	"github.com/shardline/shardline/internal/ingest"
	"github.com/shardline/shardline/internal/schema"
	"github.com/shardline/shardline/testkit/testddb"
)

// lambdaLimit is Lambda's limit on a synchronous response payload.
const lambdaLimit = 6 << 20 // 6,291,456 bytes

// invoke runs h as the Lambda runtime does (aws-lambda-go's
// lambda.NewHandler, which encodes the handler's answer) and returns the
// payload the function would send back, and the answer decoded.
func invoke(t *testing.T, h apiHandler, path string, q url.Values) ([]byte, events.APIGatewayV2HTTPResponse) {
	t.Helper()
	req := events.APIGatewayV2HTTPRequest{Version: "2.0", RawPath: path, RawQueryString: q.Encode()}
	req.RequestContext.HTTP.Method = "GET"
	in, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	payload, err := lambda.NewHandler(h.Invoke).Invoke(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	var resp events.APIGatewayV2HTTPResponse
	if err := json.Unmarshal(payload, &resp); err != nil {
		t.Fatal(err)
	}
	return payload, resp
}

// escapers are the data of events built to grow as much as JSON allows when
// their JSON is embedded in the answer, and then in Lambda's payload: each
// entry is one JSON-string character as sent, and how many bytes it takes.
var escapers = []struct {
	name, unit string
}{
	{"html", "<>&"},       // 1 byte each; \u003c in the body, \\u003c in the payload
	{"quote", `\"\\`},     // 2 bytes each; 4 in the payload
	{"control", `\u0001`}, // 6 bytes; 7 in the payload
	{"separator", "\u2028"},
	{"plain", "x"},
}

// bigEvent is an event of about size bytes as sent, whose data is a string
// of one escaper's units.
func bigEvent(source, id string, at time.Time, size int, unit string) []byte {
	head := fmt.Sprintf(`{"id":%q,"source":%q,"type":"big","time":%q,"data":"`, id, source, at.Format(time.RFC3339Nano))
	n := (size - len(head) - 2) / len(unit)
	return []byte(head + strings.Repeat(unit, n) + `"}`)
}

// loadBig stores n events of about size bytes each over the three hours
// before now, cycling through the escapers, through the real ingest
// handler; it returns their ids in time order.
func loadBig(t *testing.T, table, source string, n, size int) []string {
	t.Helper()
	cfg := ingest.DefaultConfig(table)
	cfg.MaxEventBytes = max(size, cloudevent.DefaultMaxBytes)
	cfg.Shards.Default, cfg.GSIShards.Default = 4, 2
	in := ingest.New(cfg, testddb.Client(t, testddb.Endpoint(t)), ingest.Options{Now: func() time.Time { return now }})
	var ids []string
	for start := 0; start < n; start += 10 {
		var kev events.KinesisEvent
		for i := start; i < min(start+10, n); i++ {
			id := fmt.Sprintf("%s-%03d", escapers[i%len(escapers)].name, i)
			at := now.Add(-3 * time.Hour).Add(time.Duration(i) * 3 * time.Hour / time.Duration(n))
			raw := bigEvent(source, id, at, size, escapers[i%len(escapers)].unit)
			if len(raw) > size {
				t.Fatalf("event %s is %d bytes, more than %d", id, len(raw), size)
			}
			kev.Records = append(kev.Records, events.KinesisEventRecord{EventSource: "aws:kinesis",
				Kinesis: events.KinesisRecord{Data: raw, SequenceNumber: fmt.Sprint(i)}})
			ids = append(ids, id)
		}
		resp, err := in.Kinesis(loading(t), kev)
		if err != nil || len(resp.BatchItemFailures) > 0 {
			t.Fatalf("load: %v %v", err, resp.BatchItemFailures)
		}
	}
	return ids
}

// pageBySize follows next_cursor to the end, checking that every answer's
// payload fits Lambda's limit, and returns the ids in the order received.
func pageBySize(t *testing.T, h apiHandler, q url.Values) (ids []string, pages int) {
	t.Helper()
	for pages = 1; ; pages++ {
		if pages > 200 {
			t.Fatalf("more than 200 pages for %v", q)
		}
		payload, resp := invoke(t, h, EventsRoute, q)
		if len(payload) >= lambdaLimit || resp.StatusCode != 200 {
			t.Fatalf("%v page %d: status %d, payload %d bytes (limit %d): %.300s", q, pages, resp.StatusCode, len(payload), lambdaLimit, resp.Body)
		}
		var r EventsResponse
		if err := json.Unmarshal([]byte(resp.Body), &r); err != nil {
			t.Fatal(err)
		}
		for _, raw := range r.Events {
			var e struct{ ID string }
			if err := json.Unmarshal(raw, &e); err != nil {
				t.Fatal(err)
			}
			ids = append(ids, e.ID)
		}
		if r.NextCursor == "" {
			return ids, pages
		}
		if len(r.Events) == 0 {
			t.Fatalf("%v page %d: no events, yet a next cursor", q, pages)
		}
		q.Set("cursor", r.NextCursor)
	}
}

func reversed(s []string) []string {
	out := make([]string, len(s))
	for i, x := range s {
		out[len(s)-1-i] = x
	}
	return out
}

// TestPagesFitLambdaPayload: pages of events at the size limits, with data
// that grows the most when escaped, each fit Lambda's 6 MB response payload
// as the runtime encodes it, on both paths and in both orders, and paging
// returns every event once, in order.
func TestPagesFitLambdaPayload(t *testing.T) {
	t.Parallel() // its own table (or the shared corpus, read only); it waits on DynamoDB Local more than on the CPU
	for _, tc := range []struct {
		name    string
		n, size int
		lean    bool // the GSI carries no events: pages fetch them
	}{
		// Enough events for two pages of 64 KiB ones, three of the largest.
		{"default 64 KiB", 40, cloudevent.DefaultMaxBytes, false},
		{"raised to 350,000 bytes", 12, cloudevent.MaxBytesLimit, false},
		{"default 64 KiB, lean GSI", 40, cloudevent.DefaultMaxBytes, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			table := testddb.Table(t)
			if tc.lean {
				table = fmt.Sprintf("lean-big-%d", time.Now().UnixNano())
				if err := schema.CreateWith(context.Background(), testddb.Client(t, testddb.Endpoint(t)), table, schema.Lean); err != nil {
					t.Fatal(err)
				}
			}
			ids := loadBig(t, table, "big", tc.n, tc.size)
			h := handlerFor(t, table, testddb.Endpoint(t))
			from, to := now.Add(-4*time.Hour).Format(time.RFC3339), now.Format(time.RFC3339)
			for _, q := range []url.Values{
				{"source": {"big"}, "from": {from}, "to": {to}},
				{"source": {"big"}, "from": {from}, "to": {to}, "limit": {"1000"}, "order": {"asc"}},
				{"source": {"big"}, "from": {from}, "to": {to}, "limit": {"1000"}, "consistent": {"true"}},
				{"source": {"big"}, "from": {from}, "to": {to}, "consistent": {"true"}, "order": {"asc"}},
			} {
				want := reversed(ids)
				if q.Get("order") == "asc" {
					want = ids
				}
				got, pages := pageBySize(t, h, maps.Clone(q))
				if strings.Join(got, ",") != strings.Join(want, ",") {
					t.Fatalf("%v: %d events in %d pages, want %d once each, in order\ngot  %v\nwant %v", q, len(got), pages, len(want), got, want)
				}
				if pages < 2 {
					t.Fatalf("%v: all %d events in one page", q, len(got))
				}
				t.Logf("%v: %d events in %d pages", q, len(got), pages)
			}
		})
	}
}

// TestQuarantinePagesFitLambdaPayload: quarantined records near the item
// size limit (raw bytes, base64 in the answer) and long compressed ones
// (returned whole) page within Lambda's payload limit, each once.
func TestQuarantinePagesFitLambdaPayload(t *testing.T) {
	t.Parallel() // its own table (or the shared corpus, read only); it waits on DynamoDB Local more than on the CPU
	table := testddb.Table(t)
	in := ingest.New(ingest.DefaultConfig(table), testddb.Client(t, testddb.Endpoint(t)), ingest.Options{Now: func() time.Time { return now }})
	r := rand.New(rand.NewPCG(3, 4))
	want := map[string]int{}
	for batch := range 4 {
		var kev events.KinesisEvent
		for i := range 5 {
			n := batch*5 + i
			data := make([]byte, 379_000)
			for k := range data {
				data[k] = byte(r.IntN(256))
			}
			if n%4 == 3 { // a long record that compresses: stored gzipped, returned whole
				data = []byte(strings.Repeat("not json ", 110_000))
			}
			seq := fmt.Sprint(5000 + n)
			want[seq] = len(data)
			kev.Records = append(kev.Records, events.KinesisEventRecord{
				EventSource: "aws:kinesis", EventSourceArn: "arn:aws:kinesis:us-east-1:000000000000:stream/s", EventID: "shardId-000000000001:" + seq,
				Kinesis: events.KinesisRecord{Data: data, SequenceNumber: seq,
					ApproximateArrivalTimestamp: events.SecondsEpochTime{Time: now.Add(-time.Duration(n+1) * time.Minute)}},
			})
		}
		if resp, err := in.Kinesis(loading(t), kev); err != nil || len(resp.BatchItemFailures) > 0 {
			t.Fatalf("%v %v", err, resp.BatchItemFailures)
		}
	}
	h := handlerFor(t, table, testddb.Endpoint(t))
	q := url.Values{"limit": {"1000"}}
	var seqs []string
	pages := 1
	for ; ; pages++ {
		if pages > 50 {
			t.Fatal("more than 50 pages")
		}
		payload, resp := invoke(t, h, QuarantineRoute, q)
		if len(payload) >= lambdaLimit || resp.StatusCode != 200 {
			t.Fatalf("page %d: status %d, payload %d bytes (limit %d): %.300s", pages, resp.StatusCode, len(payload), lambdaLimit, resp.Body)
		}
		var qr QuarantineResponse
		if err := json.Unmarshal([]byte(resp.Body), &qr); err != nil {
			t.Fatal(err)
		}
		for _, rec := range qr.Records {
			seq, _ := rec.Origin["sequence_number"].(string)
			if len(rec.Raw) != want[seq] || rec.Truncated {
				t.Fatalf("record %s: %d raw bytes (truncated %v), want %d", seq, len(rec.Raw), rec.Truncated, want[seq])
			}
			seqs = append(seqs, seq)
		}
		if qr.NextCursor == "" {
			break
		}
		q.Set("cursor", qr.NextCursor)
	}
	increasing := sort.StringsAreSorted(seqs)
	if len(seqs) != len(want) || !increasing || len(distinct(seqs)) != len(seqs) {
		t.Fatalf("got records %v, want the %d sent, newest first, once each", seqs, len(want))
	}
	if pages < 2 {
		t.Fatal("every record in one page")
	}
	t.Logf("%d records in %d pages", len(seqs), pages)
}

func distinct(s []string) map[string]bool {
	m := map[string]bool{}
	for _, x := range s {
		m[x] = true
	}
	return m
}
