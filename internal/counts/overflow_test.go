package counts_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/shardline/shardline/internal/counts"
	"github.com/shardline/shardline/internal/emf"
	"github.com/shardline/shardline/internal/item"
	"github.com/shardline/shardline/internal/schema"
	"github.com/shardline/shardline/pkg/bucketing"
	"github.com/shardline/shardline/testkit/faultproxy"
	"github.com/shardline/shardline/testkit/simtime"
	"github.com/shardline/shardline/testkit/testddb"
)

// floodType is the i-th type of the flooding producer: 200 bytes, an id in
// it, as a producer that puts a uuid in `type` sends.
func floodType(i int) string {
	return fmt.Sprintf("flood.%05d.", i) + strings.Repeat("x", 188)
}

// TestCounterOverflow: one source sends 2,000 distinct 200-byte types in
// ten minutes (about 440 KB of counters in one item, had it kept them all),
// interleaved on the same stream shard with two ordinary sources. Every
// batch succeeds at its first delivery, as the mapping would deliver it:
// no batch is retried, so nothing blocks the shard. After the scheduled
// fold and the hour's roll-up (its invocation two minutes into the next
// hour, on a virtual clock), the ordinary sources' counts are exact, and
// stay current when they send more afterwards (read after the next fold);
// the flooding source's total is exact in every bucket, its first 100
// types are counted by name and the rest in the overflow, answered as the
// "other" series; the fold's metric says how many events overflowed, and
// its hour item stays far from 400 KB. Delivered again, nothing counts
// twice.
func TestCounterOverflow(t *testing.T) {
	e := newEnv(t)
	hour := now.Add(-time.Hour) // 11:00, a whole hour before now
	var batch []ev
	for i := range 2000 {
		batch = append(batch, ev{"flood", fmt.Sprint(i), floodType(i), hour.Add(time.Duration(i) * 290 * time.Millisecond)})
		if i%10 == 0 {
			batch = append(batch, ev{fmt.Sprintf("calm-%d", i/10%2), fmt.Sprint(i), fmt.Sprintf("order.%d", i%3),
				hour.Add(time.Duration(i) * 1790 * time.Millisecond).Add(-30 * time.Minute)})
		}
	}
	for i := 0; i < len(batch); i += 500 {
		e.send(t, e.ingest, e.add(batch[i:min(i+500, len(batch))]...))
	}

	f := counts.New(counts.Config{Table: e.table, Retention: 30 * 24 * time.Hour}, testddb.Client(t, testddb.Endpoint(t)), counts.Options{})
	recs := e.stream(t)
	invokeOnce(t, f, recs, 1000)
	var metrics, logs bytes.Buffer
	e.foldAt(t, now.Add(counts.RollupAfter), &metrics, &logs)

	from, to := hour.Add(-time.Hour).Format(time.RFC3339), now.Format(time.RFC3339)
	for _, s := range []string{"calm-0", "calm-1"} {
		e.check(t, s, from, to)
	}
	total := e.checkOverflow(t, "flood", from, to, counts.MaxTypesPerItem)
	q := url.Values{"source": {"flood"}, "from": {from}, "to": {to}, "interval": {"1m"}, "group_by": {"type"}}
	last := floodType(1999) // sent last: overflowed
	q.Set("type", last)
	if got := e.read(t, q).Series; len(got) != 1 || got[0].Other == nil || !got[0].Other.Overflow {
		t.Errorf("type=%.20s… by type: %d series; want only the overflow's", last, len(got))
	}
	q.Del("group_by")
	if got := e.read(t, q).Series; len(got) != 2 || got[0].Other != nil || got[1].Other == nil || !got[1].Other.Overflow {
		t.Errorf("type=%.20s…: %d series; want its own (empty) and the overflow's", last, len(got))
	}

	if overflowed := metricSum(t, &metrics, counts.MetricOverflow); overflowed != 2000-counts.MaxTypesPerItem || total != 2000 {
		t.Errorf("the metric %s says %d events overflowed; want %d of %d", counts.MetricOverflow, overflowed, 2000-counts.MaxTypesPerItem, total)
	}
	if !strings.Contains(logs.String(), `"msg":"counted without type","source":"flood"`) {
		t.Errorf("no log names the flooding source:\n%.2000s", logs.String())
	}
	size := itemBytes(t, e.table, "flood", bucketing.Hour(hour))
	t.Logf("the flooding source's hour item: %d bytes", size)
	if size > 64<<10 {
		t.Errorf("the flooding source's hour item is %d bytes; 100 types of 200 bytes should take about 30 KB", size)
	}

	// The ordinary sources go on, and are counted at the next fold.
	var more []ev
	for i := range 60 {
		more = append(more, ev{fmt.Sprintf("calm-%d", i%2), fmt.Sprintf("more-%d", i), "order.9", now.Add(-time.Duration(i) * time.Minute)})
	}
	e.send(t, e.ingest, e.add(more...))
	again := e.stream(t)
	for shard, rs := range again {
		again[shard] = rs[len(recs[shard]):]
	}
	invokeOnce(t, f, again, 1000)
	e.foldAt(t, now.Add(counts.RollupAfter+time.Minute), &bytes.Buffer{}, &bytes.Buffer{})
	for _, s := range []string{"calm-0", "calm-1"} {
		e.check(t, s, from, to)
	}

	// Every record again, to a new container, with other boundaries.
	metrics.Reset()
	cold := counts.New(counts.Config{Table: e.table, Retention: 30 * 24 * time.Hour}, testddb.Client(t, testddb.Endpoint(t)),
		counts.Options{Metrics: emf.New(&metrics, counts.Dimensions())})
	invokeOnce(t, cold, e.stream(t), 333)
	if n, l := metricSum(t, &metrics, "Counted"), metricSum(t, &metrics, counts.MetricLinks); n != 0 || l != 0 {
		t.Errorf("redelivered, %d events counted again, in %d links", n, l)
	}
	metrics.Reset()
	e.foldAt(t, now.Add(counts.RollupAfter+2*time.Minute), &metrics, &bytes.Buffer{})
	if r, o := metricSum(t, &metrics, counts.MetricFoldRuns), metricSum(t, &metrics, counts.MetricOverflow); r != 0 || o != 0 {
		t.Errorf("redelivered, the fold wrote %d runs, %d events overflowed", r, o)
	}
	e.checkOverflow(t, "flood", from, to, counts.MaxTypesPerItem)
}

// foldAt invokes the scheduled fold as the stack's rule does, on a virtual
// clock from at (a minute of folds, and the roll-up if it is due), its
// metrics and logs to metrics and logs.
func (e *env) foldAt(t *testing.T, at time.Time, metrics, logs *bytes.Buffer) {
	t.Helper()
	simtime.Run(t, at, func(t *testing.T, clock *simtime.Clock) {
		cfg := counts.FoldConfig{Config: counts.Config{Table: e.table, Retention: 30 * 24 * time.Hour}, Buckets: testBuckets}
		f := counts.NewFold(cfg, clock.Client(testddb.Endpoint(t), 5*time.Millisecond), counts.Options{
			Logger: slog.New(slog.NewJSONHandler(logs, nil)), Metrics: emf.New(metrics, counts.FoldDimensions())})
		f.LSM.Now = clock.Now
		if err := f.Invoke(context.Background(), events.EventBridgeEvent{DetailType: "Scheduled Event", Source: "aws.events", Time: at}); err != nil {
			t.Fatal(err)
		}
	})
}

// testBuckets is the tests' L1 buckets: few, so that sources share them.
const testBuckets = 4

// readLevels reads r from every level, as the query function does.
func (e *env) readLevels(t *testing.T, r counts.Request) (counts.Response, error) {
	return counts.ReadLevels(context.Background(), e.client, e.table, testBuckets, r)
}

// invokeOnce delivers every shard's records to f in batches of n, each
// once: a batch that fails is a batch the mapping would retry, holding up
// every source on its shard.
func invokeOnce(t *testing.T, f *counts.Function, recs map[string][]events.DynamoDBEventRecord, n int) {
	t.Helper()
	for shard, rs := range recs {
		for i := 0; i < len(rs); i += n {
			ev := events.DynamoDBTimeWindowEvent{}
			ev.ShardID = shard
			ev.Records = rs[i:min(i+n, len(rs))]
			if _, err := f.Invoke(context.Background(), ev); err != nil {
				t.Fatalf("batch %d of shard %s failed, and would be retried: %v", i/n, shard, err)
			}
		}
	}
}

// checkOverflow compares the flooding source's counts with the reference:
// the one series of all its events exactly; by type, each type's series
// exactly, named of them, and the "other" series the rest, marked as
// overflow. It returns the events counted.
func (e *env) checkOverflow(t *testing.T, source, from, to string, named int) int {
	t.Helper()
	return e.checkOverflowWith(t, func(r counts.Request) (counts.Response, error) { return e.readLevels(t, r) }, source, from, to, named)
}

// checkOverflowWith is checkOverflow through read.
func (e *env) checkOverflowWith(t *testing.T, read func(counts.Request) (counts.Response, error), source, from, to string, named int) int {
	t.Helper()
	readQ := func(q url.Values) counts.Response {
		t.Helper()
		resp, err := read(e.request(t, q))
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	all := readQ(url.Values{"source": {source}, "from": {from}, "to": {to}, "interval": {"1m"}})
	ref := e.reference(e.request(t, url.Values{"source": {source}, "from": {from}, "to": {to}, "interval": {"1m"}}))
	if g, w := flatten(all), flatten(ref); g != w {
		t.Fatalf("all of %s:\n got %.300s\nwant %.300s", source, g, w)
	}
	q := url.Values{"source": {source}, "from": {from}, "to": {to}, "interval": {"1m"}, "group_by": {"type"}}
	byType := readQ(q)
	ref = e.reference(e.request(t, q))
	want := map[string]counts.Series{}
	for _, s := range ref.Series {
		want[s.Type] = s
	}
	n := len(byType.Series)
	other := byType.Series[n-1]
	if other.Other == nil || !other.Other.Overflow || other.Other.Types != 0 || other.Type != "" {
		t.Fatalf("the last series is %+v; want the other series, of overflow only", other.Other)
	}
	if n-1 != named {
		t.Errorf("%d types counted by name; want %d", n-1, named)
	}
	sums := make([]int64, len(other.Points))
	for _, s := range byType.Series {
		if s.Other == nil {
			if g, w := flatten(counts.Response{Series: []counts.Series{s}}), flatten(counts.Response{Series: []counts.Series{want[s.Type]}}); g != w {
				t.Fatalf("type %.20s…:\n got %.300s\nwant %.300s", s.Type, g, w)
			}
		}
		for i, p := range s.Points {
			sums[i] += p.Count
		}
	}
	total := 0
	for i, p := range all.Series[0].Points {
		if sums[i] != p.Count {
			t.Fatalf("at %s the series by type add up to %d; the source has %d events", p.T, sums[i], p.Count)
		}
		total += int(p.Count)
	}
	return total
}

func (e *env) request(t *testing.T, q url.Values) counts.Request {
	t.Helper()
	r, err := counts.ParseRequest(q.Encode(), now)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func (e *env) read(t *testing.T, q url.Values) counts.Response {
	t.Helper()
	resp, err := e.readLevels(t, e.request(t, q))
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// metricSum adds up metric name over the EMF lines written.
func metricSum(t *testing.T, out *bytes.Buffer, name string) int {
	t.Helper()
	n := 0.0
	sc := bufio.NewScanner(out)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var line map[string]any
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("metric line %q: %v", sc.Text(), err)
		}
		v, _ := line[name].(float64)
		n += v
	}
	return int(n)
}

// itemBytes is the size of a counter item as DynamoDB counts it.
func itemBytes(t *testing.T, table, source, sk string) int {
	t.Helper()
	out, err := testddb.Client(t, testddb.Endpoint(t)).GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName: aws.String(table),
		Key: map[string]types.AttributeValue{
			schema.PK: &types.AttributeValueMemberS{Value: bucketing.CounterPK(source)},
			schema.SK: &types.AttributeValueMemberS{Value: sk},
		},
	})
	if err != nil || out.Item == nil {
		t.Fatalf("counter item of %s %s: %v", source, sk, err)
	}
	return item.Bytes(out.Item)
}

// invalid is DynamoDB refusing a request for its content, as it refuses an
// update that would take an item past 400 KB.
var invalid = &faultproxy.Fault{Status: 400, Code: "ValidationException"}
