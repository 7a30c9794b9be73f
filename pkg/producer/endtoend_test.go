package producer_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shardline/shardline/internal/backoff"
	"github.com/shardline/shardline/internal/ingest"
	"github.com/shardline/shardline/internal/pace"
	"github.com/shardline/shardline/local/kinesispoll"
	"github.com/shardline/shardline/pkg/producer"
	"github.com/shardline/shardline/testkit/faultproxy"
	"github.com/shardline/shardline/testkit/testddb"
	"github.com/shardline/shardline/testkit/testkinesis"
)

// TestEndToEnd is the whole Kinesis path: the producer (aggregated and
// not) → the fault proxy, which fails PutRecords entries (throttled,
// internal failures) and throttles whole requests → kinesalite → the
// poller playing Lambda's event source mapping → the real ingest handler →
// DynamoDB Local behind a second fault proxy (throttling, unprocessed
// items, so ingest reports batchItemFailures and records come again).
// Every event is stored exactly once: those with a time under it, those
// without under the one the producer gave them, none under two.
func TestEndToEnd(t *testing.T) {
	t.Parallel() // its own stream and table; it waits on kinesalite and DynamoDB Local more than on the CPU
	for _, aggregate := range []bool{false, true} {
		t.Run(fmt.Sprintf("aggregate=%v", aggregate), func(t *testing.T) {
			t.Parallel() // each on its own stream, table and proxies
			endToEnd(t, aggregate)
		})
	}
}

func endToEnd(t *testing.T, aggregate bool) {
	const n = 1500
	arn, name := stream(t, 2)
	kproxy := faultproxy.For(t, testkinesis.Endpoint(t))
	var mu sync.Mutex
	rng := rand.New(rand.NewPCG(12, 34))
	kproxy.SetEntryFault(func(e faultproxy.Entry) string {
		mu.Lock()
		defer mu.Unlock()
		switch x := rng.Float64(); {
		case e.N%3 == 1 && e.Index%2 == 0: // a few aggregates make few entries: fail some for sure
			return faultproxy.EntryThrottled
		case e.N%3 == 0 && e.Index%2 == 1:
			return faultproxy.EntryInternalFailure
		case x < 0.10:
			return faultproxy.EntryThrottled
		case x < 0.15:
			return faultproxy.EntryInternalFailure
		}
		return ""
	})
	kproxy.SetRule(func(r faultproxy.Request) (*faultproxy.Fault, faultproxy.Hold) {
		if r.Op == "PutRecords" && r.N%4 == 2 {
			return faultproxy.Throttled, nil
		}
		return nil, nil
	})

	table := testddb.Table(t)
	dproxy := faultproxy.For(t, testddb.Endpoint(t))
	dproxy.SetRule(faultproxy.Mix{Seed: 7, Throttled: 0.05, Partial: 0.2}.Rule())
	// The proxy's faults are random, not heat: ingest need not wait out on
	// the wall clock the pace a hot key would need. Its clock, waits and
	// pacing run fast, as internal/ingest's random-fault tests run theirs.
	clk := simClock{real: time.Now(), speed: 20}
	h := ingest.New(ingest.DefaultConfig(table), testddb.Client(t, dproxy.URL), ingest.Options{Now: clk.now, Sleep: clk.sleep, Pacer: &pace.Pacer{Now: clk.now}})
	poller := &kinesispoll.Poller{Client: testkinesis.Client(t, testkinesis.Endpoint(t)), StreamARN: arn.Full, Handler: h.Kinesis,
		BatchSize: 100, RetryAttempts: -1, Bisect: true, Idle: 20 * time.Millisecond}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- poller.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("poller: %v", err)
		}
	})

	opts := []producer.KinesisOption{producer.WithLinger(5 * time.Millisecond), producer.WithRetries(30, time.Millisecond, 50*time.Millisecond)}
	if aggregate {
		opts = append(opts, producer.WithAggregation())
	}
	out := newOutcomes()
	p := producer.NewKinesis(client(kproxy.URL), name, append(opts, producer.WithOnResult(out.record))...)
	now := time.Now().UTC().Truncate(time.Millisecond)
	want := map[string]string{} // id -> its key, or "" when the producer gives the time
	for i := range n {
		id := fmt.Sprintf("e2e-%05d", i)
		e := map[string]any{"specversion": "1.0", "source": "e2e", "type": "t", "id": id, "data": map[string]any{"i": i}}
		want[id] = ""
		if i%3 != 0 {
			at := now.Add(-time.Duration(i) * time.Second)
			e["time"] = at.Format(time.RFC3339Nano)
			want[id] = testddb.EventKey("e2e", id, at)
		}
		if err := p.Put(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	closeCtx, closeCancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer closeCancel()
	if err := p.Close(closeCtx); err != nil {
		t.Fatal(err)
	}
	s := p.Stats()
	if s.Put != n || s.Failed != 0 || len(out.ok) != n || s.Retried == 0 || kproxy.EntriesFailed.Load() == 0 || kproxy.Faults.Load() == 0 {
		t.Fatalf("producer stats %+v, %d outcomes; proxy failed %d entries and %d requests", s, len(out.ok), kproxy.EntriesFailed.Load(), kproxy.Faults.Load())
	}
	if aggregate && s.Records >= n/10 {
		t.Fatalf("aggregated: %d records for %d events", s.Records, n)
	}

	ddb := testddb.Client(t, testddb.Endpoint(t))
	var st testddb.Stored
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if st = testddb.StoredIn(t, ddb, table); len(st.Events) >= n {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d events stored; poller processed %d records, gave up on %d", len(st.Events), n, poller.Processed(), poller.GivenUp())
		}
		time.Sleep(100 * time.Millisecond)
	}
	perID := map[string]int{}
	for k, c := range st.Events {
		if c != 1 {
			t.Errorf("%s stored %d times", k, c)
		}
		id := strings.Fields(k)[1]
		perID[id]++
		if w, ok := want[id]; !ok || w != "" && w != k {
			t.Errorf("stored %s, not sent so", k)
		}
	}
	for id := range want {
		if perID[id] != 1 {
			t.Errorf("%s stored under %d keys", id, perID[id])
		}
	}
	if st.Quarantined != 0 || poller.GivenUp() != 0 || dproxy.Faults.Load()+dproxy.Held.Load() == 0 {
		t.Fatalf("%d quarantined, %d records given up on; DynamoDB faults %d, held %d", st.Quarantined, poller.GivenUp(), dproxy.Faults.Load(), dproxy.Held.Load())
	}
	t.Logf("%d events in %d records, %d PutRecords (%d entries and %d requests failed by the proxy); ingest met %d DynamoDB faults and %d unprocessed items",
		n, s.Records, s.Requests, kproxy.EntriesFailed.Load(), kproxy.Faults.Load(), dproxy.Faults.Load(), dproxy.Held.Load())
}

// simClock runs speed times faster than the wall clock from real: this
// test's faults are random, not heat, and its verdict does not depend on
// its timing (the heat simulations run on testkit/simtime's virtual clock).
type simClock struct {
	real  time.Time
	speed float64
}

func (c simClock) now() time.Time {
	return c.real.Add(time.Duration(float64(time.Since(c.real)) * c.speed))
}

// sleep waits d of the clock: d/speed of the wall clock.
func (c simClock) sleep(ctx context.Context, d time.Duration) error {
	return backoff.SleepWithin(ctx, time.Duration(float64(d)/c.speed))
}
