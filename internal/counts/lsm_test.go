package counts_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/shardline/shardline/internal/counts"
	"github.com/shardline/shardline/testkit/faultproxy"
	"github.com/shardline/shardline/testkit/simtime"
	"github.com/shardline/shardline/testkit/testddb"
)

func (e *env) lsm(t *testing.T, endpoint string, at time.Time) *counts.LSM {
	return &counts.LSM{Client: testddb.Client(t, endpoint), Table: e.table, Buckets: 4, Retention: 30 * 24 * time.Hour,
		Now: func() time.Time { return at }}
}

// checkLSM compares what every level answers with the distinct events,
// for each source over 25 days, and for the first over the last two hours.
func (e *env) checkLSM(t *testing.T, l *counts.LSM, sources ...string) {
	t.Helper()
	read := func(r counts.Request) (counts.Response, error) { return l.Read(context.Background(), r) }
	for _, s := range sources {
		e.checkWith(t, read, s, now.Add(-25*24*time.Hour).Format(time.RFC3339), now.Format(time.RFC3339))
	}
	e.checkWith(t, read, sources[0], now.Add(-2*time.Hour).Format(time.RFC3339), now.Format(time.RFC3339))
}

// newRecords is recs after those of before, shard by shard.
func newRecords(before, recs map[string][]events.DynamoDBEventRecord) map[string][]events.DynamoDBEventRecord {
	out := map[string][]events.DynamoDBEventRecord{}
	for shard, rs := range recs {
		out[shard] = rs[len(before[shard]):]
	}
	return out
}

// TestLSMExact: events in the chains, folded into L1, read from L1; rolled
// up into L2 at 11:30, so that the hours before 11:00 are in L2 and 11:00's
// stay in L1 (in runs partly rolled), read from both; more events, folded
// and read from both; rolled up after noon; the fold and the roll-up run
// again and change nothing. At each step GET /v1/counts's answer equals
// the distinct events', at every interval and grouping.
func TestLSMExact(t *testing.T) {
	e := newEnv(t)
	recs := mixed(t, e)
	link(t, e.chain(t, testddb.Endpoint(t)), recs, 7, 1)
	at := now.Add(-30 * time.Minute)
	l := e.lsm(t, testddb.Endpoint(t), now)
	l.Now = func() time.Time { return at }
	fold(t, l, 1)
	e.checkLSM(t, l, "s0", "s1", "s2")

	st, err := l.Rollup(context.Background())
	if err != nil || st.Items == 0 {
		t.Fatalf("roll-up: %+v, %v", st, err)
	}
	e.checkLSM(t, l, "s0", "s1", "s2")

	rng := rand.New(rand.NewPCG(5, 5))
	var more []ev
	for i := range 60 {
		more = append(more, ev{fmt.Sprintf("s%d", i%3), fmt.Sprintf("more-%d", i), fmt.Sprintf("t%d", i%4), now.Add(-time.Duration(rng.Int64N(int64(3 * time.Hour))))})
	}
	e.send(t, e.ingest, e.add(more...))
	link(t, e.chain(t, testddb.Endpoint(t)), newRecords(recs, e.stream(t)), 9, 1)
	fold(t, l, 2)
	e.checkLSM(t, l, "s0", "s1", "s2")
	at = now.Add(20 * time.Second)
	if _, err := l.Rollup(context.Background()); err != nil {
		t.Fatal(err)
	}
	fold(t, l, 0)
	if st, err := l.Rollup(context.Background()); err != nil || st.Items != 0 {
		t.Fatalf("a roll-up again: %+v, %v; want nothing written", st, err)
	}
	e.checkLSM(t, l, "s0", "s1", "s2")
}

// fold runs l.Fold and checks the run it wrote (0: none).
func fold(t *testing.T, l *counts.LSM, run int64) counts.FoldStats {
	t.Helper()
	st, err := l.Fold(context.Background())
	if err != nil || st.Run != run {
		t.Fatalf("fold: %+v, %v; want run %d", st, err, run)
	}
	return st
}

// TestLSMFoldAndRollupStoppedHalfway: a fold whose run is written but not
// marked done (its state update fails) is finished by the next fold, with
// the same links, not the ones that arrived since; a roll-up whose L2
// writes fail in part is finished by the next. Nothing counts twice.
func TestLSMFoldAndRollupStoppedHalfway(t *testing.T) {
	e := newEnv(t)
	recs := mixed(t, e)
	link(t, e.chain(t, testddb.Endpoint(t)), recs, 13, 1)
	var failFold, failRollup atomic.Bool
	failFold.Store(true)
	p := faultproxy.For(t, testddb.Endpoint(t))
	p.SetRule(func(r faultproxy.Request) (*faultproxy.Fault, faultproxy.Hold) {
		switch {
		case r.Op != "UpdateItem":
		case failFold.Load() && bytes.Contains(r.Body, []byte(`{"S":"state"}`)):
			return faultproxy.ServerError, nil
		case failRollup.Load() && bytes.Contains(r.Body, []byte(`{"S":"C#s1"}`)):
			return faultproxy.ServerError, nil
		}
		return nil, nil
	})
	broken := e.lsm(t, p.URL, now.Add(20*time.Second))
	if st, err := broken.Fold(context.Background()); err == nil {
		t.Fatalf("%+v: the fold whose state update failed succeeded", st)
	}
	failFold.Store(false)
	var more []ev
	for i := range 20 {
		more = append(more, ev{"s1", fmt.Sprintf("after-%d", i), "t9", now.Add(-time.Duration(i) * time.Minute)})
	}
	e.send(t, e.ingest, e.add(more...))
	link(t, e.chain(t, testddb.Endpoint(t)), newRecords(recs, e.stream(t)), 13, 1)

	l := e.lsm(t, testddb.Endpoint(t), now.Add(20*time.Second))
	if st := fold(t, l, 1); !st.Redone {
		t.Fatalf("%+v: the second fold did not finish the first's run", st)
	}
	fold(t, l, 2) // the links since: a run of their own

	failRollup.Store(true)
	if st, err := broken.Rollup(context.Background()); err == nil || st.Items == 0 {
		t.Fatalf("%+v, %v: want a roll-up that wrote some items and failed on others", st, err)
	}
	e.checkLSM(t, l, "s0", "s1", "s2")
	failRollup.Store(false)
	if _, err := broken.Rollup(context.Background()); err != nil {
		t.Fatal(err)
	}
	e.checkLSM(t, l, "s0", "s1", "s2")
}

// TestLSMReadsThePerSourceCounter: the switch-over. The first batches
// are counted by the per-source counter (the previous release); then the
// chain gets the rest, from 20 records before where the counter stopped
// (its last batch delivered again, with other boundaries, to the new
// release): the chain's first batch leaves out what the counter counted.
// The read sums both, and L2's hour items beside the ten-minute items.
func TestLSMReadsThePerSourceCounter(t *testing.T) {
	e, recs := sharedMixed(t)
	early, late := map[string][]events.DynamoDBEventRecord{}, map[string][]events.DynamoDBEventRecord{}
	for shard, rs := range recs {
		early[shard], late[shard] = rs[:len(rs)/2], rs[len(rs)/2-20:]
	}
	deliver(t, e.counter(t, testddb.Endpoint(t)), early, 11)
	if st := link(t, e.chain(t, testddb.Endpoint(t)), late, 11, 1); st.Seen != 20*len(recs) {
		t.Fatalf("%+v: the chain's first batches should leave out the 20 records a shard's counter items counted", st)
	}
	l := e.lsm(t, testddb.Endpoint(t), now.Add(20*time.Second))
	fold(t, l, 1)
	e.checkLSM(t, l, "s0", "s1", "s2")
	if _, err := l.Rollup(context.Background()); err != nil {
		t.Fatal(err)
	}
	e.checkLSM(t, l, "s0", "s1", "s2")
}

// TestLSMTypesCap: with 3 types by name per ten minutes, a source sends 5
// types in each of its ten minutes. By type, the first 3 met are named and
// the rest are "other", the same before the roll-up and after it, and the
// total is exact.
func TestLSMTypesCap(t *testing.T) {
	e := newEnv(t)
	hour := now.Add(-2 * time.Hour)
	var evs []ev
	for i := range 60 {
		evs = append(evs, ev{"many", fmt.Sprint(i), fmt.Sprintf("k%d", i%5), hour.Add(time.Duration(i) * 30 * time.Second)})
	}
	e.send(t, e.ingest, e.add(evs...))
	link(t, e.chain(t, testddb.Endpoint(t)), e.stream(t), 1000, 1)
	l := e.lsm(t, testddb.Endpoint(t), now.Add(20*time.Second))
	l.MaxTypes = 3
	fold(t, l, 1)
	from, to := hour.Add(-time.Hour).Format(time.RFC3339), now.Format(time.RFC3339)
	before := e.checkOverflowWith(t, func(r counts.Request) (counts.Response, error) { return l.Read(context.Background(), r) }, "many", from, to, 3)
	st, err := l.Rollup(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// Each ten minutes has 20 events, 4 of each type; k3 and k4 overflow.
	if st.Overflowed != 24 || st.OverflowBySource["many"] != 24 {
		t.Errorf("the roll-up says %d events overflowed (%v); want 24, of \"many\"", st.Overflowed, st.OverflowBySource)
	}
	after := e.checkOverflowWith(t, func(r counts.Request) (counts.Response, error) { return l.Read(context.Background(), r) }, "many", from, to, 3)
	if before != after || before != 60 {
		t.Fatalf("%d events before the roll-up, %d after; want 60", before, after)
	}
}

// TestLSMMinute: the scheduled fold on a virtual clock. A counter links a
// batch every 15 s from 12:01:02 while invocations a minute apart run from
// 12:01:00: each folds at once and every 20 s (at 12:01:00 nothing is
// linked yet; at :20 and :40 there is), and the one from 12:02:00 rolls
// the hour before up, once. The counts read exact at the end.
func TestLSMMinute(t *testing.T) {
	e, recs := sharedMixed(t)
	shards := shardsOf(recs)
	simtime.Run(t, now.Add(time.Minute), func(t *testing.T, clock *simtime.Clock) {
		client := clock.Client(testddb.Endpoint(t), 5*time.Millisecond)
		c := &counts.Chain{Client: client, Table: e.table, Retention: 30 * 24 * time.Hour, Now: clock.Now}
		l := &counts.LSM{Client: client, Table: e.table, Buckets: 4, Retention: 30 * 24 * time.Hour, Now: clock.Now}
		ctx := context.Background()
		done := make(chan struct{})
		go func() {
			defer close(done)
			time.Sleep(2 * time.Second)
			for _, shard := range shards {
				rs := recs[shard]
				for i := 0; i < len(rs); i += 40 {
					if _, err := c.Apply(ctx, shard, rs[i:min(i+40, len(rs))]); err != nil {
						t.Error(err)
						return
					}
					time.Sleep(15 * time.Second)
				}
			}
		}()
		var rolled []int
		for m := range 3 {
			st, err := l.Minute(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if m == 0 && st.Folds != 2 {
				t.Errorf("minute %d: %d folds; want 2, at :20 and :40", m, st.Folds)
			}
			if st.Rolled {
				rolled = append(rolled, m)
			}
			time.Sleep(clock.Now().Truncate(time.Minute).Add(time.Minute).Sub(clock.Now()))
		}
		<-done
		if _, err := l.Minute(ctx); err != nil { // the links of the last batches
			t.Fatal(err)
		}
		if len(rolled) != 1 || rolled[0] != 1 {
			t.Errorf("rolled up in minutes %v; want once, in the one from 12:02", rolled)
		}
		e.checkLSM(t, l, "s0", "s1", "s2")
	})
}
