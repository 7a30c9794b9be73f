package writer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/shardline/shardline/internal/item"
	"github.com/shardline/shardline/internal/pace"
	"github.com/shardline/shardline/internal/schema"
	"github.com/shardline/shardline/testkit/faultproxy"
	"github.com/shardline/shardline/testkit/simtime"
	"github.com/shardline/shardline/testkit/testddb"
)

func TestMain(m *testing.M) { testddb.Main(m) }

func mk(pk, sk, body string) item.Item {
	return item.Item{PK: pk, SK: sk, Attrs: map[string]types.AttributeValue{
		schema.PK:    &types.AttributeValueMemberS{Value: pk},
		schema.SK:    &types.AttributeValueMemberS{Value: sk},
		schema.Event: &types.AttributeValueMemberS{Value: body},
	}}
}

func get(t *testing.T, c *dynamodb.Client, table, pk, sk string) map[string]types.AttributeValue {
	out, err := c.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{schema.PK: &types.AttributeValueMemberS{Value: pk}, schema.SK: &types.AttributeValueMemberS{Value: sk}}})
	if err != nil {
		t.Fatal(err)
	}
	return out.Item
}

// TestDuplicateKeysWrittenOnce: a batch holding the same key twice (which
// BatchWriteItem refuses in one request) is written with the last value,
// and both items are reported stored.
func TestDuplicateKeysWrittenOnce(t *testing.T) {
	table := testddb.Table(t)
	c := testddb.Client(t, testddb.Endpoint(t))
	w := &Writer{Client: c, Table: table, Concurrency: 4}
	var items []item.Item
	for i := range 60 {
		items = append(items, mk("p", fmt.Sprintf("k%02d", i%40), fmt.Sprintf("v%d", i)))
	}
	res := w.Write(context.Background(), items)
	if res.Count(Stored) != 60 {
		t.Fatalf("%d stored, want 60: %v", res.Count(Stored), res.Err)
	}
	if res.Requests != 2 { // 40 distinct keys: two requests
		t.Fatalf("%d requests, want 2", res.Requests)
	}
	if got := get(t, c, table, "p", "k05")[schema.Event].(*types.AttributeValueMemberS).Value; got != "v45" {
		t.Fatalf("k05 holds %q, want the last write v45", got)
	}
	if res.WCU <= 0 {
		t.Fatalf("no consumed capacity reported")
	}
}

// TestInvalidItemIsolated: one item DynamoDB refuses (too large) does not
// fail the 24 beside it in its request.
func TestInvalidItemIsolated(t *testing.T) {
	table := testddb.Table(t)
	c := testddb.Client(t, testddb.Endpoint(t))
	w := &Writer{Client: c, Table: table}
	var items []item.Item
	for i := range 25 {
		body := "small"
		if i == 7 {
			body = strings.Repeat("x", 420_000)
		}
		items = append(items, mk("p", fmt.Sprintf("k%02d", i), body))
	}
	res := w.Write(context.Background(), items)
	if res.Status[7] != Invalid || res.Err[7] == nil {
		t.Fatalf("item 7: %v %v", res.Status[7], res.Err[7])
	}
	if res.Count(Stored) != 24 {
		t.Fatalf("%d stored, want 24", res.Count(Stored))
	}
	if get(t, c, table, "p", "k08") == nil || get(t, c, table, "p", "k07") != nil {
		t.Fatal("table does not hold what the verdicts say")
	}
}

// TestMissingTableFailsEveryItem: a misconfigured table name is a failure
// to retry later, not a verdict on the items.
func TestMissingTableFailsEveryItem(t *testing.T) {
	w := &Writer{Client: testddb.Client(t, testddb.Endpoint(t)), Table: "no-such-table"}
	res := w.Write(context.Background(), []item.Item{mk("p", "a", "x"), mk("p", "b", "y")})
	if res.Count(Failed) != 2 || !strings.Contains(res.Err[0].Error(), "no-such-table") {
		t.Fatalf("statuses %v, err %v", res.Status, res.Err[0])
	}
}

// TestWriteInOrderRetriesTheHeadFirst: behind one throttled key, the items
// a caller counts in order (a Kinesis shard's records) are stored from the
// first on, so the shard moves on; retrying every request at once spreads
// the key's capacity over the whole batch. The partition model in the fault
// proxy throttles the key as DynamoDB would.
func TestWriteInOrderRetriesTheHeadFirst(t *testing.T) {
	endpoint := testddb.Endpoint(t)
	prefix := map[string]int{}
	for _, how := range []string{"in order", "all at once"} {
		table := testddb.Table(t)
		proxy := faultproxy.For(t, endpoint)
		var res Result
		var items []item.Item
		for i := range 400 {
			items = append(items, mk("hot", fmt.Sprintf("k%03d", i), "v"))
		}
		items = append(items, mk("hot", "k000", "v")) // the same key as the first: one verdict
		// On the virtual clock (testkit/simtime): a busy machine cannot
		// make the deadline come before the work it allows is done.
		simtime.Run(t, time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC), func(t *testing.T, clk *simtime.Clock) {
			proxy.SetRule((&faultproxy.Partitions{WCU: 40, Keys: []string{schema.PK}, Now: clk.Seen}).Rule())
			w := &Writer{Client: clk.Client(proxy.URL, 5*time.Millisecond), Table: table, Concurrency: 8}
			ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
			defer cancel()
			write := w.Write
			if how == "in order" {
				write = w.WriteInOrder
			}
			res = write(ctx, items)
		})
		if res.Status[0] != res.Status[400] {
			t.Errorf("%s: items of one key have verdicts %v and %v", how, res.Status[0], res.Status[400])
		}
		for i, st := range res.Status[:400] {
			stored := get(t, testddb.Client(t, endpoint), table, "hot", fmt.Sprintf("k%03d", i)) != nil
			// A write cut off by the deadline may have reached the table
			// before its answer was lost: it is reported failed, and
			// writing it again is harmless. Any other disagreement is a bug.
			cutOff := errors.Is(res.Err[i], context.DeadlineExceeded)
			if st == Stored && !stored || st != Stored && stored && !cutOff {
				t.Fatalf("%s: item %d reported %v (%v), in the table: %v", how, i, st, res.Err[i], stored)
			}
			if st != Stored && res.Err[i] == nil {
				t.Fatalf("%s: item %d %v without a reason", how, i, st)
			}
		}
		if res.Count(Stored) == len(items) {
			t.Fatalf("%s: all stored: the model did not throttle", how)
		}
		prefix[how] = slices.Index(res.Status, Failed)
		t.Logf("%s: %d of 400 stored, the first %d of them in a row, %d requests", how, res.Count(Stored), prefix[how], res.Requests)
	}
	// 40 WCU/s for 4 s of the virtual clock: the head of the batch gets
	// most of it.
	if prefix["in order"] < 25 {
		t.Errorf("in order, the first %d items were stored in a row, want at least 25 (all at once: %d)", prefix["in order"], prefix["all at once"])
	}
}

// TestPacedWritersDoNotHammer: four writers, as four Lambda containers,
// each with a backlog three times what one hot key takes, deliver until
// everything is stored, the way Kinesis delivers again what a batch did not
// finish. Paced, they are refused at most once per item stored; re-sending
// blind, in the same run, several times as often.
func TestPacedWritersDoNotHammer(t *testing.T) {
	endpoint := testddb.Endpoint(t)
	amplification := map[bool]float64{}
	for _, paced := range []bool{false, true} {
		// On the virtual clock (testkit/simtime), each request 5 ms of
		// it: the deliveries' 500 ms and the key's ceiling are the
		// clock's, so how much a busy machine retries within a delivery
		// changes nothing measured.
		hot := newHotKey(t, endpoint)
		var h hammered
		simtime.Run(t, time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC), func(t *testing.T, clk *simtime.Clock) {
			h = hot.hammer(t, paced, func() *dynamodb.Client { return clk.Client(hot.proxy.URL, 5*time.Millisecond) }, clk.Seen)
		})
		amplification[paced] = h.perItem()
		t.Logf("paced %v: %d sent, %d refused (%.0f%%), %d stored counting deliveries again: %.2f refused per item",
			paced, h.sent, h.refused, 100*float64(h.refused)/float64(h.sent), h.stored, h.perItem())
		if h.throttled == 0 {
			t.Fatalf("paced %v: the model throttled nothing", paced)
		}
	}
	if amplification[true] > 1 {
		t.Errorf("paced: %.2f throttled attempts per item stored, want at most 1", amplification[true])
	}
	if amplification[true] > amplification[false]/2 {
		t.Errorf("paced: %.2f throttled attempts per item stored, not half of re-sending blind (%.2f)", amplification[true], amplification[false])
	}
}

// BenchmarkRetryAmplification is TestPacedWritersDoNotHammer's overload
// as a figure for make bench: throttled attempts per item written, paced
// and re-sending blind, in the same run. Each iteration is one whole
// overload; ns/op is its wall time, which says little.
func BenchmarkRetryAmplification(b *testing.B) {
	endpoint := testddb.Endpoint(b)
	for _, paced := range []bool{false, true} {
		name := "blind"
		if paced {
			name = "paced"
		}
		b.Run(name, func(b *testing.B) {
			var refused, sent, items float64
			for b.Loop() {
				hot := newHotKey(b, endpoint)
				h := hot.hammer(b, paced, func() *dynamodb.Client { return testddb.Client(b, hot.proxy.URL) }, time.Now)
				refused += float64(h.refused)
				sent += float64(h.sent)
				items += float64(h.items)
			}
			b.ReportMetric(refused/items, "throttled/item")
			b.ReportMetric(100*refused/sent, "%throttled")
		})
	}
}

// hammered is what one overload of a hot key showed.
type hammered struct {
	items, sent, refused, stored, throttled int64
}

// perItem is the throttled attempts per distinct item written: a
// delivery again counts an item stored before it once more.
func (h hammered) perItem() float64 { return float64(h.refused) / float64(h.items) }

// hotKey is a table behind the partition model's proxy.
type hotKey struct {
	table string
	proxy *faultproxy.Proxy
}

// newHotKey makes a table and a proxy in front of DynamoDB Local at
// endpoint, outside any simulation.
func newHotKey(t testing.TB, endpoint string) hotKey {
	return hotKey{table: testddb.Table(t), proxy: faultproxy.For(t, endpoint)}
}

// hammer runs four writers at once, as four Lambda containers on four
// Kinesis shards, each delivering 100 one-unit items to one key of the
// partition model with a ceiling of 150 WCU/s (2.7 seconds of the key for
// all four), in order, Kinesis-style: each delivery again starts at the
// first item not stored. Each writer's client comes from client; now is
// the model's clock.
func (hot hotKey) hammer(t testing.TB, paced bool, client func() *dynamodb.Client, now func() time.Time) hammered {
	const (
		ceiling   = 150 // write units a second on the hot key
		perWriter = 100
	)
	model := &faultproxy.Partitions{WCU: ceiling, Keys: []string{schema.PK}, Now: now}
	hot.proxy.SetRule(model.Rule())
	var sent, refused, stored atomic.Int64
	var wg sync.WaitGroup
	for wr := range 4 {
		w := &Writer{Client: client(), Table: hot.table, Concurrency: 4}
		if paced {
			w.Pacer = &pace.Pacer{KeyWCU: ceiling}
		}
		var items []item.Item
		for i := range perWriter {
			items = append(items, mk("hot", fmt.Sprintf("w%d-%03d", wr, i), "v"))
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for round := 0; len(items) > 0; round++ {
				if round == 200 {
					t.Errorf("writer %d: %d items left after %d deliveries", wr, len(items), round)
					return
				}
				ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
				res := w.WriteInOrder(ctx, items)
				cancel()
				sent.Add(int64(res.Sent))
				refused.Add(int64(res.Refused))
				stored.Add(int64(res.Count(Stored)))
				// Kinesis delivers again from the first record not stored.
				if i := slices.Index(res.Status, Failed); i >= 0 {
					items = items[i:]
				} else {
					items = nil
				}
			}
		}()
	}
	wg.Wait()
	return hammered{items: 4 * perWriter, sent: sent.Load(), refused: refused.Load(), stored: stored.Load(), throttled: model.Throttled.Load()}
}
