package counts_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/shardline/shardline/internal/counts"
	"github.com/shardline/shardline/internal/item"
	"github.com/shardline/shardline/ops/sourcecounter"
	"github.com/shardline/shardline/testkit/faultproxy"
	"github.com/shardline/shardline/testkit/testddb"
)

// givenUp is a counter batch that Lambda gave up on under the previous
// release (the per-source counter), and the batch after it. Such batches
// are redriven by Counter.Redrive after the switch-over, from the notes
// that release left (Chain.Redrive answers ErrBeforeChain for them).
type givenUp struct {
	e           *env
	shard       string
	batch, next []events.DynamoDBEventRecord
	proxy       *faultproxy.Proxy
	fn          *previousRelease
}

// previousRelease is the counter function of the releases before the L0
// chain: the per-source counter, and a note of what a failed invocation
// left uncounted.
type previousRelease struct{ Counter *sourcecounter.Counter }

func (p *previousRelease) Invoke(ctx context.Context, ev events.DynamoDBTimeWindowEvent) (events.DynamoDBTimeWindowEventResponse, error) {
	resp, _, err := p.Counter.Handle(ctx, ev)
	if err != nil {
		if nerr := p.Counter.NoteFailure(ctx, ev.ShardID, ev.Records); nerr != nil {
			return resp, errors.Join(err, nerr)
		}
	}
	return resp, err
}

// giveUp stores 20 events of sources a and b in one counter item (ten
// minutes), then 20 more of each, and invokes the counter function with the first 40 stream records
// while every update of b's counters fails: three attempts, as Lambda
// retries, each failing after a's counter was updated. noteFails makes the
// notes of the failures fail too.
func giveUp(t *testing.T, noteFails bool) *givenUp {
	t.Helper()
	e := newEnv(t)
	hour := now.Add(-3 * time.Hour).Truncate(time.Hour)
	var early, late []ev
	for i := range 20 {
		for _, s := range []string{"a", "b"} {
			early = append(early, ev{s, fmt.Sprintf("%s%d", s, i), "t", hour.Add(time.Duration(i) * 10 * time.Second)})
			late = append(late, ev{s, fmt.Sprintf("%s%d", s, 20+i), "t", hour.Add(time.Duration(20+i) * 10 * time.Second)})
		}
	}
	e.send(t, e.ingest, e.add(early...))
	before := e.stream(t)
	e.send(t, e.ingest, e.add(late...))
	after := e.stream(t)
	if len(before) != 1 {
		t.Fatalf("%d stream shards; the test wants one", len(before))
	}
	g := &givenUp{e: e}
	for shard, recs := range before {
		g.shard, g.batch, g.next = shard, inserts(recs), inserts(after[shard][len(recs):])
	}
	if len(g.batch) != 40 || len(g.next) != 40 {
		t.Fatalf("%d and %d stream records", len(g.batch), len(g.next))
	}
	g.proxy = faultproxy.For(t, testddb.Endpoint(t))
	g.proxy.SetRule(func(r faultproxy.Request) (*faultproxy.Fault, faultproxy.Hold) {
		if r.Op == "UpdateItem" && (bytes.Contains(r.Body, []byte(`{"S":"C#b"}`)) || noteFails && bytes.Contains(r.Body, []byte(`C##gaveup#`))) {
			return invalid, nil
		}
		return nil, nil
	})
	g.fn = &previousRelease{Counter: e.counter(t, g.proxy.URL)}
	for range 3 {
		if _, err := g.fn.Invoke(context.Background(), g.event(g.batch)); err == nil {
			t.Fatal("the batch was counted despite the fault")
		}
	}
	g.proxy.SetRule(nil)
	return g
}

// inserts are the records the counter's mapping passes: inserted events.
func inserts(recs []events.DynamoDBEventRecord) []events.DynamoDBEventRecord {
	var out []events.DynamoDBEventRecord
	for _, r := range recs {
		if item.IsEventChange(r, "INSERT") {
			out = append(out, r)
		}
	}
	return out
}

func (g *givenUp) event(recs []events.DynamoDBEventRecord) events.DynamoDBTimeWindowEvent {
	var ev events.DynamoDBTimeWindowEvent
	ev.ShardID, ev.Records = g.shard, recs
	return ev
}

// moveOn is Lambda going on with the next batch after giving one up.
func (g *givenUp) moveOn(t *testing.T) {
	t.Helper()
	if _, err := g.fn.Invoke(context.Background(), g.event(g.next)); err != nil {
		t.Fatal(err)
	}
}

func (g *givenUp) check(t *testing.T) {
	t.Helper()
	hour := now.Add(-3 * time.Hour).Truncate(time.Hour)
	for _, s := range []string{"a", "b"} {
		g.e.check(t, s, hour.Format(time.RFC3339), hour.Add(time.Hour).Format(time.RFC3339))
	}
}

// TestRedriveCountsWhatTheGivenUpBatchMissed: Lambda gave a counter batch
// up, under the previous release, after its attempts had counted source a but not b, and went on with
// the next batch, which moved b's watermark past the given-up records. The
// batch delivered again as it was counts nothing (the watermarks say it was
// counted); Redrive counts exactly b's missing events, from the note of the
// last attempt, and run again counts nothing: redriving is idempotent.
func TestRedriveCountsWhatTheGivenUpBatchMissed(t *testing.T) {
	g := giveUp(t, false)
	g.moveOn(t)
	ctx := context.Background()
	if st, err := g.fn.Counter.Apply(ctx, g.shard, g.batch); err != nil || st.Counted != 0 {
		t.Fatalf("the batch delivered again counted %d (%v): the watermarks should have hidden b's gap", st.Counted, err)
	}
	chain := g.e.chain(t, testddb.Endpoint(t))
	if _, err := chain.Redrive(ctx, g.shard, g.batch); !errors.Is(err, counts.ErrBeforeChain) {
		t.Fatalf("the chain's redrive of a batch given up before it: %v; want ErrBeforeChain", err)
	}
	c := g.e.counter(t, testddb.Endpoint(t)) // a new container, as the redrive command is
	st, err := c.Redrive(ctx, g.shard, g.batch)
	if err != nil || st.Counted != 20 || st.Already != 20 || st.Records != 40 {
		t.Fatalf("redrive: %+v, %v", st, err)
	}
	g.check(t)
	for _, c := range []*sourcecounter.Counter{c, g.e.counter(t, testddb.Endpoint(t))} { // the same container, and a fresh one
		st, err = c.Redrive(ctx, g.shard, g.batch)
		if err != nil || st.Counted != 0 || st.Already != 40 {
			t.Fatalf("second redrive: %+v, %v", st, err)
		}
	}
	g.check(t)
}

// TestRedriveWithoutANote: when the failed attempts could not write their
// note, the watermarks still tell while no later batch has counted past
// the given-up one; once one has, Redrive counts nothing it cannot tell and
// names the counter items instead.
func TestRedriveWithoutANote(t *testing.T) {
	ctx := context.Background()
	t.Run("before the next batch", func(t *testing.T) {
		g := giveUp(t, true)
		st, err := g.e.counter(t, testddb.Endpoint(t)).Redrive(ctx, g.shard, g.batch)
		if err != nil || st.Counted != 20 || st.Already != 20 {
			t.Fatalf("redrive: %+v, %v", st, err)
		}
		g.moveOn(t)
		g.check(t)
	})
	t.Run("after it", func(t *testing.T) {
		g := giveUp(t, true)
		g.moveOn(t)
		st, err := g.e.counter(t, testddb.Endpoint(t)).Redrive(ctx, g.shard, g.batch)
		var amb *sourcecounter.AmbiguousError
		if !errors.As(err, &amb) || len(amb.Items) != 2 || st.Counted != 0 {
			t.Fatalf("redrive: %+v, %v", st, err)
		}
	})
}
