package ingest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/shardline/shardline/internal/schema"
	"github.com/shardline/shardline/testkit/faultproxy"
	"github.com/shardline/shardline/testkit/simtime"
	"github.com/shardline/shardline/testkit/testddb"
)

func TestMain(m *testing.M) { testddb.Main(m) }

// fixtureNow is the "now" of the samples in events/.
var fixtureNow = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

type env struct {
	table    string
	client   *dynamodb.Client  // the test's own, on DynamoDB Local
	h        apiHandler        // its API answers checked against the OpenAPI document
	proxy    *faultproxy.Proxy // nil unless asked for
	cfg      Config
	endpoint string // DynamoDB Local's
	via      string // the handler's endpoint: DynamoDB Local, or the proxy
}

// newEnv makes a fresh table and a handler on it, at fixtureNow. With
// proxied, the handler talks through a fault proxy.
func newEnv(t *testing.T, proxied bool, edit func(*Config)) *env {
	t.Helper()
	e := newSimEnv(t, proxied, edit)
	e.client = testddb.Client(t, e.endpoint)
	e.h = checked(t, New(e.cfg, testddb.Client(t, e.via), Options{Now: func() time.Time { return fixtureNow }}))
	return e
}

// newSimEnv is newEnv for a test on a virtual clock (testkit/simtime): it
// makes the table, and the proxy with proxied, which cannot be made inside
// simtime.Run, and leaves e without clients or handler until env.on gives
// it those of the clock, inside.
func newSimEnv(t *testing.T, proxied bool, edit func(*Config)) *env {
	t.Helper()
	e := &env{table: testddb.Table(t), endpoint: testddb.Endpoint(t)}
	e.via = e.endpoint
	if proxied {
		e.proxy = faultproxy.For(t, e.endpoint)
		e.via = e.proxy.URL
	}
	e.cfg = DefaultConfig(e.table)
	if edit != nil {
		edit(&e.cfg)
	}
	return e
}

// on gives e, made by newSimEnv, clients on clk and a handler whose clock
// is clk's (from the start simtime.Run was given); call it inside Run.
// Each of the handler's requests waits lag of the clock, as DynamoDB's
// latency; the test's own (e.client: scan, itemsIn, assertExactlyOnce)
// wait nothing.
func (e *env) on(t *testing.T, clk *simtime.Clock, lag time.Duration) {
	t.Helper()
	e.client = clk.Client(e.endpoint, 0)
	e.h = checked(t, New(e.cfg, clk.Client(e.via, lag), Options{Now: clk.Now}))
}

// scan returns every item of the table.
func (e *env) scan(t *testing.T) []map[string]types.AttributeValue {
	t.Helper()
	return testddb.Scan(t, e.client, e.table)
}

// itemsIn returns the items whose partition key starts with prefix.
func (e *env) itemsIn(t *testing.T, prefix string) []map[string]types.AttributeValue {
	return withPrefix(e.scan(t), prefix)
}

// withPrefix is the items of items whose partition key begins with prefix.
func withPrefix(items []map[string]types.AttributeValue, prefix string) []map[string]types.AttributeValue {
	var out []map[string]types.AttributeValue
	for _, it := range items {
		if strings.HasPrefix(s(it, schema.PK), prefix) {
			out = append(out, it)
		}
	}
	return out
}

func s(it map[string]types.AttributeValue, name string) string {
	if v, ok := it[name].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}

// storedEvent decodes the event JSON of an item.
func storedEvent(t *testing.T, it map[string]types.AttributeValue) map[string]any {
	t.Helper()
	var m map[string]any
	d := json.NewDecoder(strings.NewReader(s(it, schema.Event)))
	d.UseNumber()
	if err := d.Decode(&m); err != nil {
		t.Fatalf("stored event %q: %v", s(it, schema.Event), err)
	}
	return m
}

// invocation is the context of an invocation with Lambda's longest
// timeout, 15 minutes, for a test that is not about time. Without a
// deadline the handler bounds its work to deadline.Default (25 s) of the
// wall clock, and its first-of-day setup to half of that: under the race
// detector, on a machine busy with other tests, a batch of 200 new
// (source, day) pairs once took longer, and the test failed on the
// machine's speed rather than on what the handler did.
func invocation(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// kinesisBatch wraps payloads as the records of one Kinesis event.
func kinesisBatch(payloads ...[]byte) events.KinesisEvent {
	var ev events.KinesisEvent
	for i, p := range payloads {
		seq := fmt.Sprintf("4965650000000000000000000000000000000000%016d", i)
		ev.Records = append(ev.Records, events.KinesisEventRecord{
			EventSource:    "aws:kinesis",
			EventSourceArn: "arn:aws:kinesis:us-east-1:000000000000:stream/test",
			EventID:        "shardId-000000000001:" + seq,
			Kinesis: events.KinesisRecord{
				Data:                        p,
				SequenceNumber:              seq,
				ApproximateArrivalTimestamp: events.SecondsEpochTime{Time: fixtureNow.Add(-time.Second)},
			},
		})
	}
	return ev
}

func eventJSON(source, id string, at time.Time) []byte {
	b, _ := json.Marshal(map[string]any{
		"specversion": "1.0", "id": id, "source": source, "type": "test.event",
		"time": at.Format(time.RFC3339Nano), "subject": "s/" + id, "data": map[string]any{"n": id},
	})
	return b
}

func readFixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "events", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func failedSeqs(r events.KinesisEventResponse) map[string]bool {
	m := map[string]bool{}
	for _, f := range r.BatchItemFailures {
		m[f.ItemIdentifier] = true
	}
	return m
}
