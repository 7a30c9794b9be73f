package counts_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/url"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/shardline/shardline/internal/cloudevent"
	"github.com/shardline/shardline/internal/counts"
	"github.com/shardline/shardline/internal/item"
	"github.com/shardline/shardline/internal/schema"
	"github.com/shardline/shardline/pkg/bucketing"
	"github.com/shardline/shardline/testkit/faultproxy"
	"github.com/shardline/shardline/testkit/testddb"
)

func (e *env) chain(t *testing.T, endpoint string) *counts.Chain {
	return &counts.Chain{Client: testddb.Client(t, endpoint), Table: e.table, Retention: 30 * 24 * time.Hour}
}

// window is the invocation Lambda sends for recs of shard: a
// DynamoDBTimeWindowEvent, the tumbling window's shape.
func window(shard string, recs []events.DynamoDBEventRecord) events.DynamoDBTimeWindowEvent {
	ev := events.DynamoDBTimeWindowEvent{}
	ev.ShardID = shard
	ev.Records = recs
	return ev
}

// link delivers every shard's records to c in batches of n, each batch
// retried until it succeeds (at most tries times), and sums the stats.
func link(t *testing.T, c *counts.Chain, recs map[string][]events.DynamoDBEventRecord, n, tries int) counts.ChainStats {
	t.Helper()
	var sum counts.ChainStats
	for shard, rs := range recs {
		for i := 0; i < len(rs); i += n {
			for attempt := 1; ; attempt++ {
				_, st, err := c.HandleChain(context.Background(), window(shard, rs[i:min(i+n, len(rs))]))
				sum.Counted += st.Counted
				sum.Seen += st.Seen
				sum.Links += st.Links
				sum.Puts += st.Puts
				sum.Conflicts += st.Conflicts
				sum.Reads += st.Reads
				sum.Bytes += st.Bytes
				sum.WCU += st.WCU
				if err == nil {
					break
				}
				if attempt >= tries {
					t.Fatalf("batch %d of %s failed %d times: %v", i/n, shard, attempt, err)
				}
			}
		}
	}
	return sum
}

// tupleKey names a count: source, UTC minute, type.
type tupleKey struct {
	source string
	minute time.Time
	typ    string
}

// chained reads every shard's chain and sums its counts, after checking
// that the chain is one: each link extends the last of the one before it
// (the first link the start), and holds records above its key only.
func (e *env) chained(t *testing.T, shards []string) map[tupleKey]int64 {
	t.Helper()
	got := map[tupleKey]int64{}
	for _, shard := range shards {
		links, err := counts.ReadLinks(context.Background(), testddb.Client(t, testddb.Endpoint(t)), e.table, shard, "0")
		if err != nil {
			t.Fatal(err)
		}
		tip := "0"
		for i, l := range links {
			if l.Key != tip || !seqBelow(l.Key, l.First) || seqBelow(l.Last, l.First) {
				t.Fatalf("%s link %d: key %s, first %s, last %s after a tip of %s: not a chain", shard, i, l.Key, l.First, l.Last, tip)
			}
			var n int64
			for _, x := range l.Tuples {
				got[tupleKey{x.Source, x.Minute, x.Type}] += x.N
				n += x.N
			}
			if n != int64(l.N) {
				t.Fatalf("%s link %d counts %d events in its tuples and says %d", shard, i, n, l.N)
			}
			tip = l.Last
		}
	}
	return got
}

func seqBelow(a, b string) bool { return len(a) < len(b) || len(a) == len(b) && a < b }

// checkChained compares the chains' counts with the distinct events.
func (e *env) checkChained(t *testing.T, shards []string) {
	t.Helper()
	want := map[tupleKey]int64{}
	for _, x := range e.want {
		want[tupleKey{x.source, x.at.Truncate(time.Minute).UTC(), x.typ}]++
	}
	got := e.chained(t, shards)
	if len(got) != len(want) {
		t.Errorf("%d counts in the chains; want %d", len(got), len(want))
	}
	for k, n := range want {
		if got[k] != n {
			t.Fatalf("%s %s %s: %d in the chains; want %d", k.source, k.minute.Format(time.RFC3339), k.typ, got[k], n)
		}
	}
}

func shardsOf(recs map[string][]events.DynamoDBEventRecord) []string {
	var out []string
	for s := range recs {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

// mixed stores 150 events of three sources over days, duplicates and a
// late event among them, and returns the stream's records.
func mixed(t *testing.T, e *env) map[string][]events.DynamoDBEventRecord {
	t.Helper()
	rng := rand.New(rand.NewPCG(3, 3))
	var batch []ev
	for i := range 150 {
		batch = append(batch, ev{fmt.Sprintf("s%d", i%3), fmt.Sprint(i), fmt.Sprintf("t%d", i%4), now.Add(-time.Duration(rng.Int64N(int64(48 * time.Hour))))})
	}
	e.add(batch...)
	e.send(t, e.ingest, append(batch, batch[:20]...))
	e.send(t, e.ingest, batch[100:])
	e.send(t, e.ingest, e.add(ev{"s0", "late", "t0", now.Add(-20 * 24 * time.Hour)}))
	return e.stream(t)
}

// mixedCorpus is mixed's events, stored through the ingest handler and
// read from their stream once per test binary, for the tests that feed
// their counters those records and read nothing more from the stream.
var mixedCorpus struct {
	once sync.Once
	recs []byte           // the stream's records, as JSON: each test decodes a copy of its own
	want map[[2]string]ev // the distinct events
}

// sharedMixed is an env and the stream records of mixed's events, for a
// test that reads the stream once, before any counter writes. The first
// test to ask stores the events in a stream table of its own and reads
// their stream; every test gets its own copy of the records and counts in
// a table of its own, without a stream (countApart), so the corpus is
// built once and no counter's writes are kept as stream records. Its env
// has no events' table: the test sends no more events.
func sharedMixed(t *testing.T) (*env, map[string][]events.DynamoDBEventRecord) {
	t.Helper()
	mixedCorpus.once.Do(func() {
		e := newEnv(t)
		recs := mixed(t, e)
		b, err := json.Marshal(recs)
		if err != nil {
			t.Fatal(err)
		}
		if back := decodeRecords(t, b); !reflect.DeepEqual(back, recs) {
			t.Fatal("the stream records do not come back the same from JSON")
		}
		mixedCorpus.recs, mixedCorpus.want = b, e.want
	})
	if mixedCorpus.recs == nil {
		t.Fatal("the mixed corpus was not built: see the first test that asked for it")
	}
	recs := decodeRecords(t, mixedCorpus.recs)
	e := &env{want: maps.Clone(mixedCorpus.want), client: testddb.Client(t, testddb.Endpoint(t))}
	e.countApart(t)
	return e, recs
}

// decodeRecords is stream records from their JSON, their times in UTC as
// the stream's reader gives them (JSON keeps the instant, not the zone).
func decodeRecords(t *testing.T, b []byte) map[string][]events.DynamoDBEventRecord {
	t.Helper()
	var recs map[string][]events.DynamoDBEventRecord
	if err := json.Unmarshal(b, &recs); err != nil {
		t.Fatal(err)
	}
	for _, rs := range recs {
		for i := range rs {
			at := &rs[i].Change.ApproximateCreationDateTime
			at.Time = at.UTC()
		}
	}
	return recs
}

// TestChainExactUnderRedelivery: every batch delivered, then delivered
// again to the same container (which sends nothing: it knows the tip),
// then again with other boundaries to a cold container (which reads the
// tip once per shard and writes nothing): every event is in exactly one
// link, and each shard's links are one chain.
func TestChainExactUnderRedelivery(t *testing.T) {
	e, recs := sharedMixed(t)
	c := e.chain(t, testddb.Endpoint(t))
	first := link(t, c, recs, 7, 1)
	if first.Counted != len(e.want) || first.Seen != 0 || first.Conflicts != 0 {
		t.Fatalf("first delivery: %+v; want %d counted", first, len(e.want))
	}
	again := link(t, c, recs, 7, 1)
	if again.Counted != 0 || again.Seen != len(e.want) || again.Puts != 0 || again.Reads != 0 {
		t.Fatalf("redelivery to the same container: %+v", again)
	}
	cold := link(t, e.chain(t, testddb.Endpoint(t)), recs, 5, 1)
	if cold.Counted != 0 || cold.Seen != len(e.want) || cold.Puts != 0 || cold.Reads != len(recs) {
		t.Fatalf("redelivery to a cold container: %+v; want one read per shard (%d)", cold, len(recs))
	}
	e.checkChained(t, shardsOf(recs))
}

// TestChainLostAnswer: a warm container's second link is applied but the
// put's answer is cut off. The retried batch puts it again at the same
// tip, meets the link it wrote, learns its last from the refusal, and
// counts nothing twice.
func TestChainLostAnswer(t *testing.T) {
	e, recs := sharedMixed(t)
	p := faultproxy.For(t, testddb.Endpoint(t))
	p.SetRule(func(r faultproxy.Request) (*faultproxy.Fault, faultproxy.Hold) {
		if r.Op == "PutItem" && r.N == 2 {
			return faultproxy.Reset, nil
		}
		return nil, nil
	})
	st := link(t, e.chain(t, p.URL), recs, 40, 5)
	if p.Faults.Load() != 1 {
		t.Fatalf("%d faults injected; want 1", p.Faults.Load())
	}
	if st.Conflicts == 0 || st.Reads != 1 {
		t.Fatalf("%+v: want the lost put refused once it was tried again, and the tip read only by the first batch", st)
	}
	e.checkChained(t, shardsOf(recs))
}

// TestChainStaleTip: container A writes the first batch; container B the
// next two; then A, whose tip is two links behind, gets a batch that
// overlaps B's. A's put is refused at its stale tip, it follows (and,
// refused again, reads the tip), and writes only what is above it.
func TestChainStaleTip(t *testing.T) {
	e, recs := sharedMixed(t)
	shards := shardsOf(recs)
	if len(shards) != 1 {
		t.Fatalf("%d stream shards; the test wants one", len(shards))
	}
	shard, rs := shards[0], recs[shards[0]]
	a, b := e.chain(t, testddb.Endpoint(t)), e.chain(t, testddb.Endpoint(t))
	apply := func(c *counts.Chain, lo, hi int) counts.ChainStats {
		t.Helper()
		_, st, err := c.HandleChain(context.Background(), window(shard, rs[lo:hi]))
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	apply(a, 0, 30)
	apply(b, 30, 60)
	apply(b, 60, 90)
	st := apply(a, 45, 120)
	if st.Conflicts == 0 || st.Counted != 30 || st.Seen != 45 {
		t.Fatalf("the stale container: %+v; want refused at its tip, 30 counted, 45 seen", st)
	}
	apply(a, 120, len(rs))
	e.checkChained(t, shards)
}

// TestChainConcurrentInvocations: three containers get the same shard's
// records at once, with other boundaries (a timed-out invocation still
// running beside its retries): each event is in exactly one link.
func TestChainConcurrentInvocations(t *testing.T) {
	e, recs := sharedMixed(t)
	var wg sync.WaitGroup
	stats := make([]counts.ChainStats, 3)
	for i, n := range []int{7, 11, 50} {
		c := e.chain(t, testddb.Endpoint(t))
		wg.Go(func() { stats[i] = link(t, c, recs, n, 1) })
	}
	wg.Wait()
	counted := 0
	for _, st := range stats {
		counted += st.Counted
	}
	if counted != len(e.want) {
		t.Fatalf("%d events counted by three containers; want %d", counted, len(e.want))
	}
	e.checkChained(t, shardsOf(recs))
}

// TestChainUnderFaults: puts and tip reads throttled, failing with server
// errors or cut off after they were applied; each failed batch is
// delivered again until it succeeds, to the same container or a new one.
func TestChainUnderFaults(t *testing.T) {
	e, recs := sharedMixed(t)
	p := faultproxy.For(t, testddb.Endpoint(t))
	faults := []*faultproxy.Fault{faultproxy.Throttled, faultproxy.ServerError, faultproxy.Reset, faultproxy.Throttling}
	p.SetRule(func(r faultproxy.Request) (*faultproxy.Fault, faultproxy.Hold) {
		if (r.Op == "PutItem" || r.Op == "Query") && r.N%2 == 1 {
			return faults[int(r.N/2)%len(faults)], nil
		}
		return nil, nil
	})
	link(t, e.chain(t, p.URL), recs, 13, 50)
	link(t, e.chain(t, p.URL), recs, 29, 50)
	if p.Faults.Load() < 4 {
		t.Fatalf("%d faults injected", p.Faults.Load())
	}
	e.checkChained(t, shardsOf(recs))
}

// TestChainCutsLinks: a batch whose pack passes the link's bound is
// written as consecutive links of the chain, each within the bound.
func TestChainCutsLinks(t *testing.T) {
	e, recs := sharedMixed(t)
	c := e.chain(t, testddb.Endpoint(t))
	c.MaxLinkBytes = 150
	st := link(t, c, recs, 1000, 1)
	if st.Links < 3 || st.Counted != len(e.want) {
		t.Fatalf("%+v: want the batch cut into links", st)
	}
	for _, it := range testddb.Scan(t, testddb.Client(t, testddb.Endpoint(t)), e.table) {
		pk := it[schema.PK].(*types.AttributeValueMemberS).Value
		if p, ok := it["p"].(*types.AttributeValueMemberB); strings.HasPrefix(pk, "C##L0#") && (!ok || len(p.Value) > c.MaxLinkBytes) {
			t.Errorf("a link of %d pack bytes; the bound is %d", len(p.Value), c.MaxLinkBytes)
		}
	}
	e.checkChained(t, shardsOf(recs))
}

// TestChainWriteUnitsPerQuietEvent: 1,000 quiet sources with one event
// each, of ten types, in the last three minutes, delivered as one batch per
// stream shard, as the mapping cuts a quiet source's traffic. Their names
// are random (device/ and 12 hex digits, as a MAC address), so that the
// pack cannot lean on names that count up. The per-source counter pays
// about one write unit per event (measured on the first 300 records); the
// chain pays for the pack's bytes only.
//
// 1,000 sources are enough for the bound to bind: fewer sources share
// shorter prefixes, so an event's share of the pack grows (8.1 bytes
// here, 7.6 at 3,000: 0.009 write units an event), and the pack
// undeflated costs 0.017. The counters write to a table without a stream
// (countApart): nothing reads their stream here.
func TestChainWriteUnitsPerQuietEvent(t *testing.T) {
	e := newEnv(t)
	const sources = 1000
	rng := rand.New(rand.NewPCG(29, 1))
	var all []ev
	for i := range sources {
		all = append(all, ev{fmt.Sprintf("device/%012x", rng.Uint64()>>16), fmt.Sprint(i), fmt.Sprintf("reading.%d", rng.IntN(10)),
			now.Add(-time.Duration(rng.IntN(180)) * time.Second)})
	}
	e.store(t, e.add(all...))
	recs := e.stream(t)
	e.countApart(t)
	chain := link(t, e.chain(t, testddb.Endpoint(t)), recs, 10000, 1)
	if chain.Counted != sources {
		t.Fatalf("counted %d in links; want %d", chain.Counted, sources)
	}
	sample := map[string][]events.DynamoDBEventRecord{}
	for shard, rs := range recs {
		sample[shard] = rs[:min(len(rs), 300/len(recs))]
	}
	old := deliver(t, e.counter(t, testddb.Endpoint(t)), sample, 10000)
	perEvent, oldPerEvent := chain.WCU/float64(sources), float64(old.Updates)/float64(old.Counted)
	t.Logf("%d quiet events on %d stream shards: the chain writes %d links, %d pack bytes (%.1f an event), %.0f WCU: %.4f WCU an event; "+
		"the per-source counter: %d updates for %d events", sources, len(recs), chain.Links, chain.Bytes, float64(chain.Bytes)/sources, chain.WCU, perEvent,
		old.Updates, old.Counted)
	if perEvent > 0.01 {
		t.Errorf("the chain costs %.4f WCU an event; want at most 0.01 (1%% of an event item's write unit)", perEvent)
	}
	if oldPerEvent < 0.9 {
		t.Errorf("the per-source counter made %.2f updates an event for quiet sources; it should pay about one each", oldPerEvent)
	}
	e.checkChained(t, shardsOf(recs))
}

// store writes evs' event items as the ingest function builds them
// (item.Event, one shard, with a GSI copy), without the ingest function's
// per-source bookkeeping, which 3,000 new sources make slow on DynamoDB
// Local: the counter reads only the event items' stream records.
func (e *env) store(t *testing.T, evs []ev) {
	t.Helper()
	c := testddb.Client(t, testddb.Endpoint(t))
	for i := 0; i < len(evs); i += 25 {
		var reqs []types.WriteRequest
		for _, x := range evs[i:min(i+25, len(evs))] {
			ce, err := cloudevent.Parse(x.json(), now, now, cloudevent.Limits{Retention: 30 * 24 * time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			it := item.Event(ce, bucketing.Step{Shards: 1, GSIShards: 1}, 30*24*time.Hour)
			reqs = append(reqs, types.WriteRequest{PutRequest: &types.PutRequest{Item: it.Attrs}})
		}
		for len(reqs) > 0 {
			out, err := c.BatchWriteItem(context.Background(), &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{e.events: reqs}})
			if err != nil {
				t.Fatal(err)
			}
			reqs = out.UnprocessedItems[e.events]
		}
	}
}

// TestChainRedrive: of one shard's records, the first 40 are linked, the
// next 40 are a batch Lambda gives up on, and the rest are linked after
// it. A redrive of the given-up batch counts its 40 events, a second
// redrive nothing, and a redrive of a batch the chain holds nothing; the
// fold and the read then answer every event once. A batch from before the
// chain's first link is left to the per-source counter's redrive.
func TestChainRedrive(t *testing.T) {
	e, recs := sharedMixed(t)
	shards := shardsOf(recs)
	if len(shards) != 1 {
		t.Fatalf("%d stream shards; the test wants one", len(shards))
	}
	shard, rs := shards[0], inserts(recs[shards[0]])
	c := e.chain(t, testddb.Endpoint(t))
	apply := func(lo, hi int) {
		t.Helper()
		if _, _, err := c.HandleChain(context.Background(), window(shard, rs[lo:hi])); err != nil {
			t.Fatal(err)
		}
	}
	apply(20, 40)
	apply(80, 100)
	apply(100, len(rs))
	ctx := context.Background()
	if _, err := c.Redrive(ctx, shard, rs[0:20]); !errors.Is(err, counts.ErrBeforeChain) {
		t.Fatalf("a batch before the chain: %v; want ErrBeforeChain", err)
	}
	given := rs[40:80]
	for i, want := range []int{40, 0} {
		st, err := e.chain(t, testddb.Endpoint(t)).Redrive(ctx, shard, given)
		if err != nil || st.Counted != want || st.Counted+st.Already != 40 {
			t.Fatalf("redrive %d: %+v, %v; want %d counted", i, st, err, want)
		}
	}
	if st, err := c.Redrive(ctx, shard, rs[90:110]); err != nil || st.Counted != 0 || st.Already != 20 {
		t.Fatalf("redrive of linked records: %+v, %v", st, err)
	}
	// The batch before the chain, as the per-source counter's redrive
	// counts it, so that the totals can be compared.
	if _, err := e.counter(t, testddb.Endpoint(t)).Apply(ctx, shard, rs[0:20]); err != nil {
		t.Fatal(err)
	}
	l := e.lsm(t, testddb.Endpoint(t), now.Add(20*time.Second))
	if _, err := l.Fold(ctx); err != nil {
		t.Fatal(err)
	}
	e.checkLSM(t, l, "s0", "s1", "s2")
}

// TestChainAtTheItemLimit: 1,500 events whose sources and types are 256
// random bytes each (about 770 KB of names that do not deflate) come in
// one batch: the chain writes them as consecutive links, each accepted by
// DynamoDB under its 400 KB, and the fold's packs of them too. The
// counters write to a table without a stream (countApart), which DynamoDB
// holds to the same 400 KB: nothing reads their stream here.
func TestChainAtTheItemLimit(t *testing.T) {
	e := newEnv(t)
	rng := rand.New(rand.NewPCG(400, 1))
	hexName := func() string {
		b := make([]byte, 128)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		return fmt.Sprintf("%x", b) // 256 bytes
	}
	var all []ev
	for i := range 1500 {
		all = append(all, ev{hexName(), fmt.Sprint(i), hexName(), now.Add(-time.Duration(i) * time.Second)})
	}
	e.store(t, e.add(all...))
	recs := e.stream(t)
	e.countApart(t)
	st := link(t, e.chain(t, testddb.Endpoint(t)), recs, 10000, 1)
	if st.Links < 2 || st.Counted != len(all) {
		t.Fatalf("%+v: want %d events in at least two links", st, len(all))
	}
	t.Logf("%d events of 512 bytes of names: %d links, %d pack bytes", len(all), st.Links, st.Bytes)
	e.checkChained(t, shardsOf(recs))
	l := e.lsm(t, testddb.Endpoint(t), now.Add(20*time.Second))
	l.Buckets = 1 // every tuple in one bucket: its pack of the run must be cut too
	fs := fold(t, l, 1)
	if fs.Packs < 2 {
		t.Fatalf("%+v: want the bucket's pack cut in parts", fs)
	}
	for _, x := range []ev{all[7], all[1499]} { // one in each part of the pack, as sources sort
		q := url.Values{"source": {x.source}, "from": {now.Add(-time.Hour).Format(time.RFC3339)}, "to": {now.Format(time.RFC3339)}, "group_by": {"type"}}
		got, err := l.Read(context.Background(), e.request(t, q))
		if err != nil {
			t.Fatal(err)
		}
		if g, w := flatten(got), flatten(e.reference(e.request(t, q))); g != w {
			t.Fatalf("%.20s…: got %.200s, want %.200s", x.source, g, w)
		}
	}
}
