package ingest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/shardline/shardline/internal/schema"
	"github.com/shardline/shardline/pkg/bucketing"
	"github.com/shardline/shardline/testkit/faultproxy"
	"github.com/shardline/shardline/testkit/simtime"
	"github.com/shardline/shardline/testkit/testddb"
)

// call is one request a traced client made: what, for which source (the
// escaped source, as in a shard record's key), and when.
type call struct {
	op, source string
	start, end time.Time
}

// traced is a DynamoDB client that holds each request lag before sending
// it and records it: requests that overlap in the record were under way at
// the same time, and one that started after another ended may have waited
// for it. lag makes that tell reliable (two requests sent together overlap
// by lag whatever the engine's speed) and plays DynamoDB's latency.
type traced struct {
	c   *dynamodb.Client
	lag time.Duration

	mu    sync.Mutex
	calls []call
	bulk  int // BatchGetItem requests; calls has one a key read
}

func (c *traced) record(op string, key map[string]types.AttributeValue, start time.Time) {
	if strings.HasPrefix(s(key, schema.PK), "S#") {
		op = "catalogue " + op
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls = append(c.calls, call{op: op, source: sourceOf(key), start: start, end: time.Now()})
}

// sourceOf is the escaped source a bookkeeping key belongs to: a shard
// record's or hour index's partition key, or a catalogue entry's sort key.
func sourceOf(key map[string]types.AttributeValue) string {
	pk, sk := s(key, schema.PK), s(key, schema.SK)
	if strings.HasPrefix(pk, "S#") {
		return bucketing.Escape(sk)
	}
	rest, ok := strings.CutPrefix(pk, "M#E#")
	if i := strings.LastIndexByte(rest, '#'); ok && i >= 0 {
		return rest[:i]
	}
	return ""
}

func (c *traced) wait() time.Time {
	start := time.Now()
	time.Sleep(c.lag)
	return start
}

func (c *traced) BatchWriteItem(ctx context.Context, in *dynamodb.BatchWriteItemInput, o ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error) {
	start := c.wait()
	defer c.record("BatchWriteItem", nil, start)
	return c.c.BatchWriteItem(ctx, in, o...)
}

func (c *traced) BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	start := c.wait()
	defer func() {
		// One call a source read, all sharing the request's time.
		c.mu.Lock()
		defer c.mu.Unlock()
		c.bulk++
		for _, ka := range in.RequestItems {
			for _, k := range ka.Keys {
				c.calls = append(c.calls, call{op: "BatchGetItem", source: sourceOf(k), start: start, end: time.Now()})
			}
		}
	}()
	return c.c.BatchGetItem(ctx, in, o...)
}

func (c *traced) GetItem(ctx context.Context, in *dynamodb.GetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	start := c.wait()
	defer c.record("GetItem", in.Key, start)
	return c.c.GetItem(ctx, in, o...)
}

func (c *traced) PutItem(ctx context.Context, in *dynamodb.PutItemInput, o ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	start := c.wait()
	defer c.record("PutItem", in.Item, start)
	return c.c.PutItem(ctx, in, o...)
}

func (c *traced) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	start := c.wait()
	defer c.record("UpdateItem", in.Key, start)
	return c.c.UpdateItem(ctx, in, o...)
}

// chain is the longest sequence of calls each of which started after the
// one before it ended: the requests that may have waited for one another.
func chain(calls []call) int {
	sort.Slice(calls, func(i, j int) bool { return calls[i].start.Before(calls[j].start) })
	depth := make([]int, len(calls))
	longest := 0
	for i, c := range calls {
		depth[i] = 1
		for j := range i {
			if !calls[j].end.After(c.start) {
				depth[i] = max(depth[i], depth[j]+1)
			}
		}
		longest = max(longest, depth[i])
	}
	return longest
}

// TestNewSourcesSetUpInParallel: the first batch of a day from sources
// that wrote yesterday, as at midnight. Each new (source, day) costs three
// keys of the batch's bulk reads and four small requests, of which at most
// three wait for one another (the bulk reads, the catalogue entry, the
// shard record; the hour index's read and mark beside the last two), the
// sources are set up lookups at a time, and every invariant of the order
// holds: the catalogue entry before the record, and the record and the
// hour marker before any event.
//
// lookups + 1 sources: one more than a round, so that one waits for a
// slot, as 2 × lookups did with twice the setups. With the lookups' slots
// set to 16 by hand (as before) the test fails: at most 16 sources set up
// at once.
func TestNewSourcesSetUpInParallel(t *testing.T) {
	const (
		sources = lookups + 1
		lag     = 150 * time.Millisecond // DynamoDB's latency, on the clock
	)
	table := testddb.Table(t)
	endpoint := testddb.Endpoint(t)
	midnight := fixtureNow.Truncate(24 * time.Hour)
	batch := func(at time.Time) events.KinesisEvent {
		var payloads [][]byte
		for i := range sources {
			payloads = append(payloads, eventJSON(fmt.Sprintf("svc-%03d#eu", i), "e-"+at.Format(time.DateOnly), at))
		}
		return kinesisBatch(payloads...)
	}
	// On a virtual clock (testkit/simtime): requests sent together start
	// at the same instant and each takes exactly lag, however busy the
	// machine, so overlap says what the code waits for, never how the
	// goroutines happened to be scheduled.
	simtime.Run(t, midnight.Add(-time.Hour), func(t *testing.T, clk *simtime.Clock) {
		yesterday := New(DefaultConfig(table), clk.Client(endpoint, 0), Options{Now: clk.Now})
		if resp, err := yesterday.Kinesis(invocation(t), batch(midnight.Add(-2*time.Hour))); err != nil || len(resp.BatchItemFailures) > 0 {
			t.Fatalf("yesterday: %v %v", resp, err)
		}
		time.Sleep(time.Hour + time.Second)

		tc := &traced{c: clk.Client(endpoint, 0), lag: lag}
		h := New(DefaultConfig(table), tc, Options{Now: clk.Now})
		began := time.Now()
		resp, err := h.Kinesis(invocation(t), batch(midnight))
		took := time.Since(began)
		if err != nil || len(resp.BatchItemFailures) > 0 {
			t.Fatalf("today: %v %v", resp, err)
		}
		checkSetUp(t, tc.calls, sources)
		bookkeeping := tc.bulk
		for _, c := range tc.calls {
			if c.op != "BatchWriteItem" && c.op != "BatchGetItem" {
				bookkeeping++
			}
		}
		t.Logf("%d new sources set up with %d requests, %.1f a source, in %v of the clock, up to %d at once (%v for each request)",
			sources, bookkeeping, float64(bookkeeping)/sources, took, inFlightOf(tc.calls), lag)
	})
}

// inFlightOf is inFlight of calls' own bookkeeping (all but event writes
// and the bulk reads, which read every source at once).
func inFlightOf(calls []call) int {
	var bookkeeping []call
	for _, c := range calls {
		if c.op != "BatchWriteItem" && c.op != "BatchGetItem" {
			bookkeeping = append(bookkeeping, c)
		}
	}
	return inFlight(bookkeeping)
}

// checkSetUp checks the requests of a first batch of the day from new
// sources: three keys of the bulk reads and four requests for each, at
// most three waiting on one another, in the order the invariants need, all
// before the first event write, and up to lookups sources at once.
func checkSetUp(t *testing.T, calls []call, sources int) {
	t.Helper()
	bySource := map[string][]call{}
	var bookkeeping []call
	firstWrite := time.Time{}
	for _, c := range calls {
		if c.op == "BatchWriteItem" {
			if firstWrite.IsZero() || c.start.Before(firstWrite) {
				firstWrite = c.start
			}
			continue
		}
		bySource[c.source] = append(bySource[c.source], c)
		bookkeeping = append(bookkeeping, c)
	}
	if len(bySource) != sources {
		t.Fatalf("bookkeeping for %d sources, want %d", len(bySource), sources)
	}
	for src, calls := range bySource {
		ops := map[string]int{}
		var catalogue, rec call
		for _, c := range calls {
			ops[c.op]++
			if c.end.After(firstWrite) {
				t.Errorf("%s: a %s ended after the first event write began", src, c.op)
			}
			switch c.op {
			case "catalogue PutItem":
				catalogue = c
			case "PutItem":
				rec = c
			}
		}
		if ops["BatchGetItem"] != 3 || ops["GetItem"] != 1 || ops["catalogue PutItem"] != 1 || ops["PutItem"] != 1 || ops["UpdateItem"] != 1 {
			t.Errorf("%s: requests %v, want 3 keys read in bulk (for the record), a GetItem (the hour index before its mark), a catalogue PutItem, a PutItem, an UpdateItem", src, ops)
		}
		if rec.start.Before(catalogue.end) {
			t.Errorf("%s: the shard record was written before its catalogue entry", src)
		}
		if n := chain(calls); n > 3 {
			t.Errorf("%s: a chain of %d requests, want at most 3", src, n)
		}
	}
	// Sources are set up lookups at a time, not 16 as before.
	if n := inFlightOf(bookkeeping); n <= 16 {
		t.Errorf("at most %d sources were set up at once, want up to %d", n, lookups)
	}
}

// inFlight is the most sources that had a request under way at once.
func inFlight(calls []call) int {
	type edge struct {
		at     time.Time
		source string
		open   bool
	}
	var edges []edge
	for _, c := range calls {
		edges = append(edges, edge{c.start, c.source, true}, edge{c.end, c.source, false})
	}
	sort.Slice(edges, func(i, j int) bool {
		if !edges[i].at.Equal(edges[j].at) {
			return edges[i].at.Before(edges[j].at)
		}
		return !edges[i].open // ends before starts at the same instant
	})
	open := map[string]int{}
	most := 0
	for _, e := range edges {
		if e.open {
			open[e.source]++
		} else if open[e.source]--; open[e.source] == 0 {
			delete(open, e.source)
		}
		most = max(most, len(open))
	}
	return most
}

// reads counts, through the proxy, the keys the handler reads and how:
// strongly consistent or not, by GetItem or BatchGetItem.
type reads struct {
	mu                           sync.Mutex
	getConsistent, getEventual   int
	bulkConsistent, bulkEventual int
}

func (r *reads) rule(req faultproxy.Request) (*faultproxy.Fault, faultproxy.Hold) {
	var in struct {
		ConsistentRead bool
		RequestItems   map[string]struct {
			ConsistentRead bool
			Keys           []json.RawMessage
		}
	}
	if (req.Op != "GetItem" && req.Op != "BatchGetItem") || json.Unmarshal(req.Body, &in) != nil {
		return nil, nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case req.Op == "GetItem" && in.ConsistentRead:
		r.getConsistent++
	case req.Op == "GetItem":
		r.getEventual++
	}
	for _, ka := range in.RequestItems {
		if ka.ConsistentRead {
			r.bulkConsistent += len(ka.Keys)
		} else {
			r.bulkEventual += len(ka.Keys)
		}
	}
	return nil, nil
}

// opCounts is how many requests of each op the proxy has seen.
func opCounts(p *faultproxy.Proxy) map[string]int64 {
	out := map[string]int64{}
	for _, op := range []string{"GetItem", "BatchGetItem", "PutItem", "UpdateItem", "BatchWriteItem"} {
		out[op] = p.Count(op)
	}
	return out
}

// since is what each op of now added to before.
func since(now, before map[string]int64) map[string]int64 {
	out := map[string]int64{}
	for op, n := range now {
		out[op] = n - before[op]
	}
	return out
}

// newDay is n sources that wrote yesterday (midnight's day before), on a
// table behind a proxy, as at midnight: today's batches of them, and
// handlers (containers) on a clock that stands at today's 00:01.
type newDay struct {
	table    string
	proxy    *faultproxy.Proxy
	midnight time.Time
	sources  int
}

// newDayOf writes yesterday's events of sources through a container of
// its own, and returns them with the proxy's counts as yesterday left them.
func newDayOf(t *testing.T, sources int) *newDay {
	t.Helper()
	d := &newDay{table: testddb.Table(t), midnight: fixtureNow.Truncate(24 * time.Hour), sources: sources}
	d.proxy = faultproxy.For(t, testddb.Endpoint(t))
	yesterday := New(DefaultConfig(d.table), testddb.Client(t, d.proxy.URL), Options{Now: func() time.Time { return d.midnight.Add(-time.Hour) }})
	if resp, err := yesterday.Kinesis(invocation(t), d.batch(d.midnight.Add(-2*time.Hour), "y")); err != nil || len(resp.BatchItemFailures) > 0 {
		t.Fatalf("yesterday: %v %v", resp, err)
	}
	return d
}

// batch is an event of each source at at, each with id.
func (d *newDay) batch(at time.Time, id string) events.KinesisEvent {
	var payloads [][]byte
	for i := range d.sources {
		payloads = append(payloads, eventJSON(fmt.Sprintf("svc-%03d#eu", i), id, at))
	}
	return kinesisBatch(payloads...)
}

// handler is a fresh container of today, logging to log (nil: nowhere).
func (d *newDay) handler(t *testing.T, log io.Writer) *Handler {
	o := Options{Now: func() time.Time { return d.midnight.Add(time.Minute) }}
	if log != nil {
		o.Logger = slog.New(slog.NewJSONHandler(log, nil))
	}
	return New(DefaultConfig(d.table), testddb.Client(t, d.proxy.URL), o)
}

// TestNewSourcesReadInBulk: the first batch of a day from 150 sources that
// wrote yesterday, as at midnight, in a fresh container. Each source's day
// record (strongly consistent) and previous day's record and hour index
// (eventually consistent) are read in BatchGetItem requests of up to 100
// keys, not in three GetItems a source: 2 + 3 requests for the 450 keys.
// What a source still reads on its own is its day's hour index before it
// marks it (one eventually consistent GetItem); it writes its catalogue
// entry, its record and its mark. Every key is read the way it was
// before, so the read units are the same: 150 consistent, 300 eventual.
// A second batch of the same sources costs no read at all (the cache).
//
// Before the bulk read: 600 GetItems (450 + 150), no BatchGetItem.
func TestNewSourcesReadInBulk(t *testing.T) {
	const sources = 150
	d := newDayOf(t, sources)
	var r reads
	d.proxy.SetRule(r.rule)
	before := opCounts(d.proxy)
	h := d.handler(t, nil)
	if resp, err := h.Kinesis(invocation(t), d.batch(d.midnight, "a")); err != nil || len(resp.BatchItemFailures) > 0 {
		t.Fatalf("today: %v %v", resp, err)
	}
	got := since(opCounts(d.proxy), before)
	want := map[string]int64{"GetItem": sources, "BatchGetItem": 2 + 3, "PutItem": 2 * sources, "UpdateItem": sources, "BatchWriteItem": got["BatchWriteItem"]}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("requests %v, want %v", got, want)
	}
	if r.getConsistent != 0 || r.getEventual != sources || r.bulkConsistent != sources || r.bulkEventual != 2*sources {
		t.Errorf("keys read: GetItem %d consistent, %d eventually; BatchGetItem %d consistent, %d eventually; want 0, %d, %d, %d",
			r.getConsistent, r.getEventual, r.bulkConsistent, r.bulkEventual, sources, sources, 2*sources)
	}
	t.Logf("%d new sources: %v, %.2f bookkeeping requests a source", sources, got,
		float64(got["GetItem"]+got["BatchGetItem"]+got["PutItem"]+got["UpdateItem"])/sources)

	before = opCounts(d.proxy)
	if resp, err := h.Kinesis(invocation(t), d.batch(d.midnight.Add(time.Second), "b")); err != nil || len(resp.BatchItemFailures) > 0 {
		t.Fatalf("today, again: %v %v", resp, err)
	}
	if got := since(opCounts(d.proxy), before); got["GetItem"]+got["BatchGetItem"]+got["PutItem"]+got["UpdateItem"] != 0 {
		t.Errorf("the same sources again, cached: %v, want no bookkeeping request", got)
	}
}
