package replay

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/shardline/shardline/internal/ingest"
	"github.com/shardline/shardline/internal/query"
	"github.com/shardline/shardline/internal/schema"
	"github.com/shardline/shardline/testkit/faultproxy"
	"github.com/shardline/shardline/testkit/testddb"
)

func TestMain(m *testing.M) { testddb.Main(m) }

// now is when the records were first ingested; the replays run an hour
// later.
var (
	now      = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	replayAt = now.Add(time.Hour)
)

const streamARN = "arn:aws:kinesis:us-east-1:000000000000:stream/test"

// env is a fresh table, reached directly and through a fault proxy that
// counts the requests of each operation.
type env struct {
	table   string
	direct  *dynamodb.Client
	proxy   *faultproxy.Proxy
	proxied *dynamodb.Client
}

func newEnv(t *testing.T) *env {
	t.Helper()
	e := &env{table: testddb.Table(t)}
	endpoint := testddb.Endpoint(t)
	e.direct = testddb.Client(t, endpoint)
	p := faultproxy.For(t, endpoint)
	e.proxy, e.proxied = p, testddb.Client(t, p.URL)
	return e
}

// ingester is the ingest function with MAX_EVENT_BYTES maxBytes (0: the
// default), whose clock reads at.
func (e *env) ingester(maxBytes int, at time.Time) *ingest.Handler {
	cfg := ingest.DefaultConfig(e.table)
	if maxBytes > 0 {
		cfg.MaxEventBytes = maxBytes
	}
	return ingest.New(cfg, e.proxied, ingest.Options{Now: func() time.Time { return at }})
}

// replayer replays with MAX_EVENT_BYTES maxBytes, at replayAt.
func (e *env) replayer(maxBytes int) *Replayer {
	return &Replayer{Client: e.proxied, Table: e.table, Ingest: e.ingester(maxBytes, replayAt), Now: func() time.Time { return replayAt }}
}

// writes is how many write requests of any kind reached the table so far.
func (e *env) writes() int64 {
	var n int64
	for _, op := range []string{"BatchWriteItem", "PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems"} {
		n += e.proxy.Count(op)
	}
	return n
}

// scan is every item of the table, keyed by pk and sk.
func (e *env) scan(t *testing.T) map[string]map[string]types.AttributeValue {
	t.Helper()
	out := map[string]map[string]types.AttributeValue{}
	for _, it := range testddb.Scan(t, e.direct, e.table) {
		out[schema.S(it[schema.PK])+" "+schema.S(it[schema.SK])] = it
	}
	return out
}

// count is how many items' partition keys start with prefix.
func (e *env) count(t *testing.T, prefix string) int {
	n := 0
	for k := range e.scan(t) {
		if strings.HasPrefix(k, prefix) {
			n++
		}
	}
	return n
}

// kinesis sends records through the ingest handler, each arriving at its
// time, and fails the test if any is reported for a retry.
func kinesis(t *testing.T, h *ingest.Handler, recs ...events.KinesisEventRecord) {
	t.Helper()
	resp, err := h.Kinesis(context.Background(), events.KinesisEvent{Records: recs})
	if err != nil || len(resp.BatchItemFailures) > 0 {
		t.Fatalf("kinesis: %v %v", err, resp.BatchItemFailures)
	}
}

func record(seq int, arrival time.Time, data []byte) events.KinesisEventRecord {
	sn := fmt.Sprintf("4965650000000000000000000000000000000000%016d", seq)
	return events.KinesisEventRecord{
		EventSource: "aws:kinesis", EventSourceArn: streamARN, EventID: "shardId-000000000001:" + sn,
		Kinesis: events.KinesisRecord{Data: data, SequenceNumber: sn, ApproximateArrivalTimestamp: events.SecondsEpochTime{Time: arrival}},
	}
}

// post sends a request to POST /v1/events, received at received.
func post(t *testing.T, h *ingest.Handler, id string, received time.Time, body string, headers map[string]string) int {
	t.Helper()
	req := events.APIGatewayV2HTTPRequest{Version: "2.0", RawPath: ingest.Route, Body: body,
		Headers: map[string]string{"content-type": "application/json"}}
	for k, v := range headers {
		req.Headers[k] = v
	}
	req.RequestContext.HTTP.Method = "POST"
	req.RequestContext.RequestID = id
	req.RequestContext.TimeEpoch = received.UnixMilli()
	resp, err := h.HTTP(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode
}

// event is a CloudEvent of about size bytes; without a time when at is
// zero.
func event(source, id string, at time.Time, size int) []byte {
	m := map[string]any{"specversion": "1.0", "id": id, "source": source, "type": "test.event", "data": map[string]any{"pad": ""}}
	if !at.IsZero() {
		m["time"] = at.Format(time.RFC3339Nano)
	}
	b, _ := json.Marshal(m)
	if pad := size - len(b); pad > 0 {
		m["data"] = map[string]any{"pad": strings.Repeat("x", pad)}
		b, _ = json.Marshal(m)
	}
	return b
}

// storedEvents reads back a source's events over [from, to) through the
// query function's reader, strongly consistent, oldest first.
func (e *env) storedEvents(t *testing.T, source string, from, to time.Time) []map[string]any {
	t.Helper()
	r := &query.Reader{Client: e.direct, Table: e.table}
	p := query.Params{Source: source, From: from, To: to, Limit: 1000, Order: query.Asc, Consistent: true}
	var out []map[string]any
	for {
		pg, err := r.Events(context.Background(), p)
		if err != nil {
			t.Fatalf("read %s: %v", source, err)
		}
		for _, it := range pg.Items {
			var m map[string]any
			if err := json.Unmarshal([]byte(schema.S(it[schema.Event])), &m); err != nil {
				t.Fatal(err)
			}
			out = append(out, m)
		}
		if pg.Next == nil {
			return out
		}
		p.Cursor = pg.Next
	}
}

// listQuarantine is GET /v1/quarantine over [from, to) through the query
// function's handler, every page, oldest first.
func (e *env) listQuarantine(t *testing.T, from, to time.Time) []query.Record {
	t.Helper()
	h := query.New(query.Config{Table: e.table}, e.direct, query.Options{Now: func() time.Time { return replayAt }})
	q := url.Values{"from": {from.Format(time.RFC3339Nano)}, "to": {to.Format(time.RFC3339Nano)}, "order": {"asc"}, "limit": {"1000"}}
	var out []query.Record
	for {
		req := events.APIGatewayV2HTTPRequest{Version: "2.0", RawPath: query.QuarantineRoute, RawQueryString: q.Encode()}
		req.RequestContext.HTTP.Method = "GET"
		resp, _ := h.HTTP(context.Background(), req)
		var r query.QuarantineResponse
		if resp.StatusCode != 200 || json.Unmarshal([]byte(resp.Body), &r) != nil {
			t.Fatalf("GET /v1/quarantine: %d %s", resp.StatusCode, resp.Body)
		}
		out = append(out, r.Records...)
		if r.NextCursor == "" {
			return out
		}
		q.Set("cursor", r.NextCursor)
	}
}

// marks maps each quarantined record, by origin ("seq 3", "req-1#2"), to
// its replay state and outcome as GET /v1/quarantine shows them; "" when
// unmarked.
func (e *env) marks(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, r := range e.listQuarantine(t, now.Add(-24*time.Hour), replayAt) {
		v := ""
		if r.Replay != nil {
			v = r.Replay.State + " | " + r.Replay.Outcome
		}
		out[originName(r.Origin)] = v
	}
	return out
}

func originName(o map[string]any) string {
	var k string
	if seq, ok := o["sequence_number"].(string); ok {
		k = "seq " + strings.TrimLeft(seq[len(seq)-16:], "0")
	} else {
		k = fmt.Sprint(o["request_id"])
	}
	if i, ok := o["index"]; ok {
		k += fmt.Sprintf("#%v", i)
	}
	return k
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
