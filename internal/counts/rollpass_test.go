package counts_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shardline/shardline/internal/counts"
	"github.com/shardline/shardline/testkit/faultproxy"
	"github.com/shardline/shardline/testkit/testddb"
)

// TestRollupInBoundedSteps: 400 quiet sources, one event each in the two
// hours before noon, folded into one run of 4 buckets. At 12:05 the hour's
// roll-up is done by invocations that take at most 150 items each, two of
// them stopped short by a timeout (their context cancelled after 75 and
// 50 L2 writes, requests in flight and all). Each invocation takes no more
// than its budget and goes on where the last recorded one stopped; the
// hour's roll-up is marked done only after the last; no item is written
// twice; and every source's counts read exact midway and after.
//
// 400 items are enough for the budget to bind: the first three
// invocations (150 taken each, two of them cut) leave items for the
// fourth and after, so the uncut second must answer Left. The counters
// write to a table without a stream (countApart): nothing reads their
// stream here.
func TestRollupInBoundedSteps(t *testing.T) {
	e := newEnv(t)
	const sources, budget = 400, 150
	rng := rand.New(rand.NewPCG(29, 2))
	var all []ev
	for i := range sources {
		all = append(all, ev{fmt.Sprintf("device/%012x", rng.Uint64()>>16), fmt.Sprint(i), fmt.Sprintf("reading.%d", rng.IntN(10)),
			now.Add(-time.Duration(1+rng.IntN(7190)) * time.Second)})
	}
	e.store(t, e.add(all...))
	recs := e.stream(t)
	e.countApart(t)
	link(t, e.chain(t, testddb.Endpoint(t)), recs, 10000, 1)
	at := now.Add(5 * time.Minute)
	l := e.lsm(t, testddb.Endpoint(t), at)
	fold(t, l, 1)

	var writes atomic.Int64
	var cut atomic.Pointer[context.CancelFunc]
	p := faultproxy.For(t, testddb.Endpoint(t))
	p.SetRule(func(r faultproxy.Request) (*faultproxy.Fault, faultproxy.Hold) {
		if r.Op == "UpdateItem" && bytes.Contains(r.Body, []byte(`"C#device`)) {
			if n := writes.Add(-1); n == 0 {
				if c := cut.Load(); c != nil {
					(*c)()
				}
			}
		}
		return nil, nil
	})
	bounded := e.lsm(t, p.URL, at)
	bounded.RollupItems = budget
	var items, taken, runs int
	for i, cutAfter := range []int64{75, 0, 50} {
		ctx, cancel := context.WithCancel(context.Background())
		writes.Store(cutAfter)
		cut.Store(&cancel)
		st, ran, err := bounded.RollupIfDue(ctx)
		cancel()
		runs++
		items += st.Items
		taken += st.Taken
		if cutAfter > 0 && err == nil || cutAfter == 0 && (err != nil || !ran || !st.Left) {
			t.Fatalf("invocation %d (cut after %d writes): %+v, ran %v, %v", i, cutAfter, st, ran, err)
		}
		if st.Taken > budget {
			t.Fatalf("invocation %d took %d items; budget %d", i, st.Taken, budget)
		}
		e.checkSources(t, l, all[:40])
	}
	writes.Store(0)
	for {
		st, ran, err := bounded.RollupIfDue(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if !ran {
			break
		}
		runs++
		items += st.Items
		taken += st.Taken
		if st.Taken > budget || runs > 30 {
			t.Fatalf("invocation %d: %+v: over its budget of %d, or never done", runs, st, budget)
		}
	}
	t.Logf("%d sources rolled up by %d invocations of at most %d items: %d items written, %d taken", sources, runs, budget, items, taken)
	if items > sources || taken > sources+2*4*256 {
		t.Errorf("%d items written, %d taken, for %d items: resumed invocations redid too much", items, taken, sources)
	}
	if runs < sources/budget {
		t.Errorf("%d invocations for %d items of at most %d", runs, sources, budget)
	}
	if st, _ := l.Rollup(context.Background()); st.Items != 0 || st.Taken != 0 {
		t.Errorf("a roll-up after the hour's was done: %+v; want nothing", st)
	}
	e.checkSources(t, l, all)
}

// checkSources compares, for each source of evs, its counts by type and
// hour over the two hours before noon with the distinct events'.
func (e *env) checkSources(t *testing.T, l *counts.LSM, evs []ev) {
	t.Helper()
	from, to := now.Add(-2*time.Hour).Format(time.RFC3339), now.Format(time.RFC3339)
	var wg sync.WaitGroup
	errs := make(chan error, len(evs))
	sem := make(chan struct{}, 4)
	for _, x := range evs {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			q := url.Values{"source": {x.source}, "from": {from}, "to": {to}, "interval": {"1h"}, "group_by": {"type"}}
			req, err := counts.ParseRequest(q.Encode(), now)
			if err != nil {
				errs <- err
				return
			}
			got, err := l.Read(context.Background(), req)
			if err != nil {
				errs <- err
				return
			}
			if g, w := flatten(got), flatten(e.reference(req)); g != w {
				errs <- fmt.Errorf("%s:\n got %s\nwant %s", x.source, g, w)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}
