package counts_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/url"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/shardline/shardline/internal/counts"
	"github.com/shardline/shardline/internal/ingest"
	"github.com/shardline/shardline/internal/params"
	"github.com/shardline/shardline/internal/schema"
	"github.com/shardline/shardline/local/ddbstreams"
	"github.com/shardline/shardline/ops/sourcecounter"
	"github.com/shardline/shardline/pkg/bucketing"
	"github.com/shardline/shardline/testkit/testddb"
)

func TestMain(m *testing.M) { testddb.Main(m) }

var now = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

type ev struct {
	source, id, typ string
	at              time.Time
}

func (e ev) json() []byte {
	b, _ := json.Marshal(map[string]any{"id": e.id, "source": e.source, "type": e.typ, "time": e.at.Format(time.RFC3339Nano)})
	return b
}

type env struct {
	table  string // the counters' table: the events', unless countApart moved them
	events string // the events' table, with its stream
	ingest *ingest.Handler
	want   map[[2]string]ev // distinct events by (source, id) — each with one time here
	client *dynamodb.Client // the readers', as a query function container keeps one
}

func newEnv(t *testing.T) *env {
	t.Helper()
	table := testddb.StreamTable(t)
	e := &env{table: table, events: table, want: map[[2]string]ev{}, client: testddb.Client(t, testddb.Endpoint(t))}
	e.ingest = e.container(t)
	return e
}

// countApart moves the counts, from now on, to a new table without a
// stream, for a test that has read every stream record it feeds the
// counters before any counter wrote: what the counters write there,
// links, packs and L2 items, is read back from the table alone, so no
// stream record is kept of it (DynamoDB Local keeps a stream's records
// after its table is gone, and every later write in the test binary pays
// for them: testddb.Table). The events stay in e.events.
func (e *env) countApart(t *testing.T) {
	t.Helper()
	e.table = testddb.Table(t)
}

// container is another ingest function instance on the events' table.
func (e *env) container(t *testing.T) *ingest.Handler {
	return ingest.New(ingest.DefaultConfig(e.events), testddb.Client(t, testddb.Endpoint(t)), ingest.Options{Now: func() time.Time { return now }})
}

// send writes evs as one Kinesis batch through h, raw lines among them.
func (e *env) send(t *testing.T, h *ingest.Handler, evs []ev, raw ...string) {
	t.Helper()
	var k events.KinesisEvent
	for i, x := range evs {
		k.Records = append(k.Records, events.KinesisEventRecord{EventSource: "aws:kinesis", EventSourceArn: "arn:aws:kinesis:us-east-1:000000000000:stream/s",
			Kinesis: events.KinesisRecord{Data: x.json(), SequenceNumber: fmt.Sprint(i)}})
	}
	for i, r := range raw {
		k.Records = append(k.Records, events.KinesisEventRecord{EventSource: "aws:kinesis", EventSourceArn: "arn:aws:kinesis:us-east-1:000000000000:stream/s",
			Kinesis: events.KinesisRecord{Data: []byte(r), SequenceNumber: fmt.Sprint(1000 + i)}})
	}
	resp, err := h.Kinesis(context.Background(), k)
	if err != nil || len(resp.BatchItemFailures) > 0 {
		t.Fatalf("ingest: %v, %d failures", err, len(resp.BatchItemFailures))
	}
}

// stream reads the whole stream of the events' table.
func (e *env) stream(t *testing.T) map[string][]events.DynamoDBEventRecord {
	t.Helper()
	c := testddb.Client(t, testddb.Endpoint(t))
	arn, err := ddbstreams.StreamARN(context.Background(), c, e.events)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := ddbstreams.Read(context.Background(), ddbstreams.Static(testddb.Endpoint(t)), arn)
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

func (e *env) counter(t *testing.T, endpoint string) *sourcecounter.Counter {
	return &sourcecounter.Counter{Client: testddb.Client(t, endpoint), Table: e.table, Retention: 30 * 24 * time.Hour}
}

// deliver applies every shard's records in batches of size n.
func deliver(t *testing.T, c *sourcecounter.Counter, recs map[string][]events.DynamoDBEventRecord, n int) sourcecounter.Stats {
	t.Helper()
	var sum sourcecounter.Stats
	for shard, rs := range recs {
		for i := 0; i < len(rs); i += n {
			st, err := c.Apply(context.Background(), shard, rs[i:min(i+n, len(rs))])
			if err != nil {
				t.Fatalf("apply: %v", err)
			}
			sum.Counted += st.Counted
			sum.Seen += st.Seen
			sum.Skipped += st.Skipped
			sum.Updates += st.Updates
			sum.Conflicts += st.Conflicts
		}
	}
	return sum
}

// check compares GET /v1/counts for every interval and grouping, read
// from every level as the query function reads it, with the counts of the
// distinct events e.want.
func (e *env) check(t *testing.T, source, from, to string) {
	t.Helper()
	e.checkWith(t, func(r counts.Request) (counts.Response, error) { return e.readLevels(t, r) }, source, from, to)
}

// checkWith is check through read.
func (e *env) checkWith(t *testing.T, read func(counts.Request) (counts.Response, error), source, from, to string) {
	t.Helper()
	for _, iv := range []string{"", "1m", "5m", "15m", "1h", "1d"} {
		for _, group := range []bool{false, true} {
			q := url.Values{"source": {source}, "from": {from}, "to": {to}}
			if iv != "" {
				q.Set("interval", iv)
			}
			if group {
				q.Set("group_by", "type")
			}
			req, err := counts.ParseRequest(q.Encode(), now)
			var pe *params.Error
			if errors.As(err, &pe) && pe.Param == "interval" && strings.Contains(pe.Problem, "buckets") {
				continue // more than 1,440 buckets: refused, as TestParseRequest checks
			}
			if err != nil {
				t.Fatalf("%v: %v", q, err)
			}
			got, err := read(req)
			if err != nil {
				t.Fatal(err)
			}
			want := e.reference(req)
			if g, w := flatten(got), flatten(want); g != w {
				t.Fatalf("%v:\n got %s\nwant %s", q, g, w)
			}
		}
	}
}

// reference counts e.want the way the API must.
func (e *env) reference(r counts.Request) counts.Response {
	sums := map[string][]int64{}
	for _, x := range e.want {
		if x.source != r.Source || x.at.Before(r.From) || !x.at.Before(r.To) || r.Type != "" && x.typ != r.Type {
			continue
		}
		k := ""
		if r.GroupByType {
			k = x.typ
		}
		if sums[k] == nil {
			sums[k] = make([]int64, r.Buckets())
		}
		sums[k][x.at.Sub(r.From)/r.Interval]++
	}
	var out counts.Response
	var keys []string
	for k := range sums {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if !r.GroupByType {
		keys = []string{""}
	}
	for _, k := range keys {
		s := counts.Series{Type: k}
		for i := range r.Buckets() {
			var n int64
			if sums[k] != nil {
				n = sums[k][i]
			}
			s.Points = append(s.Points, counts.Point{T: r.From.Add(time.Duration(i) * r.Interval).Format(time.RFC3339), Count: n})
		}
		out.Series = append(out.Series, s)
	}
	return out
}

func flatten(r counts.Response) string {
	b, _ := json.Marshal(r.Series)
	return string(b)
}

func (e *env) add(evs ...ev) []ev {
	for _, x := range evs {
		e.want[[2]string{x.source, x.id}] = x
	}
	return evs
}

// TestCountsExactUnderEveryRedelivery: duplicates in a batch, a Kinesis
// batch delivered twice, two containers writing the same events at once, a
// late event, quarantined records, and the stream delivered again in whole
// and in part with other boundaries: every event counts once.
func TestCountsExactUnderEveryRedelivery(t *testing.T) {
	e := newEnv(t)
	var batch []ev
	for i := range 120 {
		batch = append(batch, ev{"svc", fmt.Sprint(i), fmt.Sprintf("type.%d", i%3), now.Add(-time.Duration(i) * 37 * time.Second)})
	}
	e.add(batch...)
	dup := append(append([]ev{}, batch...), batch[:30]...) // duplicates inside the batch
	e.send(t, e.ingest, dup, "not json", `{"id":"x"}`)     // and two records for the quarantine
	e.send(t, e.ingest, dup)                               // the same Kinesis batch again
	late := e.add(ev{"svc", "late", "type.0", now.Add(-20 * 24 * time.Hour)})
	other := e.container(t)
	var wg sync.WaitGroup
	for _, h := range []*ingest.Handler{e.ingest, other} { // two containers at once
		wg.Add(1)
		go func() { defer wg.Done(); e.send(t, h, append(late, batch[50:]...)) }()
	}
	wg.Wait()

	recs := e.stream(t)
	c := e.chain(t, testddb.Endpoint(t))
	first := link(t, c, recs, 7, 1)
	if first.Counted != len(e.want) || first.Seen != 0 {
		t.Fatalf("first delivery counted %d, saw %d; want %d, 0", first.Counted, first.Seen, len(e.want))
	}
	again := link(t, c, recs, 7, 1) // every batch delivered twice, to the same container
	if again.Counted != 0 || again.Seen != len(e.want) || again.Puts != 0 {
		t.Fatalf("redelivery counted %d, saw %d, with %d puts", again.Counted, again.Seen, again.Puts)
	}
	// and again with other boundaries, to a new container that must learn
	// from the chain itself where it stands
	cold := link(t, e.chain(t, testddb.Endpoint(t)), recs, 5, 1)
	if cold.Counted != 0 || cold.Seen != len(e.want) || cold.Reads == 0 {
		t.Fatalf("cold redelivery counted %d, saw %d, %d tip reads", cold.Counted, cold.Seen, cold.Reads)
	}
	e.foldAndRoll(t)
	e.check(t, "svc", now.Add(-25*24*time.Hour).Format(time.RFC3339), now.Format(time.RFC3339))
	e.check(t, "svc", now.Add(-2*time.Hour).Format(time.RFC3339), now.Format(time.RFC3339))
}

// foldAndRoll folds every chain's new links and rolls up the hours that
// ended, as the scheduled fold does two minutes after now.
func (e *env) foldAndRoll(t *testing.T) {
	t.Helper()
	l := e.lsm(t, testddb.Endpoint(t), now.Add(counts.RollupAfter))
	if _, err := l.Fold(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Rollup(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestCountsMatchAReference: random event sets (sources, types, times over
// days, duplicates, late events), random delivery batch sizes, delivered
// twice: the counts equal those of the distinct events, at every interval
// and grouping.
func TestCountsMatchAReference(t *testing.T) {
	for seed := range uint64(4) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			e := newEnv(t)
			rng := rand.New(rand.NewPCG(seed, 99))
			var all []ev
			for i := range 100 + rng.IntN(150) {
				x := ev{fmt.Sprintf("src-%d", rng.IntN(3)), fmt.Sprintf("%d-%d", seed, rng.IntN(200)), fmt.Sprintf("k%d", rng.IntN(5)),
					now.Add(-time.Duration(rng.Int64N(int64(10 * 24 * time.Hour))))}
				if _, ok := e.want[[2]string{x.source, x.id}]; ok {
					x = e.want[[2]string{x.source, x.id}] // a duplicate: the same event again
				}
				e.add(x)
				all = append(all, x)
				_ = i
			}
			for i := 0; i < len(all); i += 100 {
				e.send(t, e.ingest, all[i:min(i+100, len(all))])
			}
			recs := e.stream(t)
			e.countApart(t)
			c := e.chain(t, testddb.Endpoint(t))
			link(t, c, recs, 1+rng.IntN(60), 1)
			link(t, c, recs, 1+rng.IntN(60), 1)
			e.foldAndRoll(t)
			for _, s := range []string{"src-0", "src-1", "src-2"} {
				e.check(t, s, now.Add(-10*24*time.Hour).Format(time.RFC3339), now.Format(time.RFC3339))
				from := now.Add(-time.Duration(rng.Int64N(int64(3 * 24 * time.Hour))))
				e.check(t, s, fmt.Sprint(from.UnixMilli()), fmt.Sprint(from.Add(20*time.Hour).UnixMilli()))
			}
		})
	}
}

// TestHourItemsOfEarlierReleasesAreRead: a release before ten-minute items
// kept a whole hour in one item under the hour's key. Such items stay in the
// table for the retention, beside the slices counted since: a chart reads
// both, whatever its range's first minute.
func TestHourItemsOfEarlierReleasesAreRead(t *testing.T) {
	e := newEnv(t)
	hour := now.Add(-2 * time.Hour) // 10:00
	var evs []ev
	for i := range 60 {
		evs = append(evs, ev{"old", fmt.Sprint(i), fmt.Sprintf("k%d", i%4), hour.Add(time.Duration(i) * 97 * time.Second)})
	}
	e.send(t, e.ingest, e.add(evs...))
	deliver(t, e.counter(t, testddb.Endpoint(t)), e.stream(t), 25)

	// The first half hour as the earlier release kept it: one item, its
	// minutes and types the same attributes, under the hour's key.
	c := testddb.Client(t, testddb.Endpoint(t))
	ctx := context.Background()
	whole := map[string]types.AttributeValue{}
	for m := 0; m < 30; m += 10 {
		key := map[string]types.AttributeValue{
			schema.PK: &types.AttributeValueMemberS{Value: bucketing.CounterPK("old")},
			schema.SK: &types.AttributeValueMemberS{Value: bucketing.CounterSK(hour.Add(time.Duration(m) * time.Minute))},
		}
		out, err := c.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(e.table), Key: key, ReturnValues: types.ReturnValueAllOld})
		if err != nil || out.Attributes == nil {
			t.Fatalf("slice %s: %v", bucketing.CounterSK(hour.Add(time.Duration(m)*time.Minute)), err)
		}
		maps.Copy(whole, out.Attributes) // a counter's name holds its minute: the slices' counters are apart

	}
	whole[schema.SK] = &types.AttributeValueMemberS{Value: bucketing.Hour(hour)}
	if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(e.table), Item: whole}); err != nil {
		t.Fatal(err)
	}
	for _, from := range []time.Time{hour, hour.Add(20 * time.Minute), hour.Add(45 * time.Minute)} {
		e.check(t, "old", from.Format(time.RFC3339), now.Format(time.RFC3339))
	}
}
