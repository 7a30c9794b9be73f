package ingest

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/shardline/shardline/testkit/faultproxy"
	"github.com/shardline/shardline/testkit/simtime"
)

// The first-of-day reads in bulk (readAhead) under faults: keys left
// unprocessed, a throttled table, the deadline. A source whose bulk read
// failed reads on its own, as before there were bulk reads, so the batch
// loses nothing; the failure is logged.

// bulkWarning begins the log line of a bulk read that failed.
const bulkWarning = "first-of-day reads in bulk"

// storeToday sends d's batch of today through h and fails t unless every
// record is stored; it returns the requests it took.
func (d *newDay) storeToday(t *testing.T, h *Handler) map[string]int64 {
	t.Helper()
	before := opCounts(d.proxy)
	if resp, err := h.Kinesis(invocation(t), d.batch(d.midnight, "a")); err != nil || len(resp.BatchItemFailures) > 0 {
		t.Fatalf("today: %d records failed, %v", len(resp.BatchItemFailures), err)
	}
	return since(opCounts(d.proxy), before)
}

// TestBulkReadLeftUnprocessedIsReadAgain: DynamoDB leaves every key of
// the bulk reads unprocessed once (the proxy's hold): the keys are read
// again in a second round, and no source reads on its own (one GetItem
// each, its hour index before its mark, as without the fault). Keys that
// stay unprocessed for ten sources are given up after the rounds'
// bound, logged, and those sources read on their own: three GetItems more
// each, every event stored.
//
// 60 sources: their 60 records and 120 keys of the previous day take a
// strongly consistent BatchGetItem and two eventually consistent ones.
func TestBulkReadLeftUnprocessedIsReadAgain(t *testing.T) {
	const sources = 60
	t.Run("once", func(t *testing.T) {
		d := newDayOf(t, sources)
		var mu sync.Mutex
		held := map[string]bool{}
		d.proxy.SetRule(func(r faultproxy.Request) (*faultproxy.Fault, faultproxy.Hold) {
			if r.Op != "BatchGetItem" {
				return nil, nil
			}
			r.HoldKeysUnprocessed()
			return nil, func(k map[string]json.RawMessage) bool {
				mu.Lock()
				defer mu.Unlock()
				id := string(k["pk"]) + string(k["sk"])
				first := !held[id]
				held[id] = true
				return first
			}
		})
		log := &syncBuffer{}
		got := d.storeToday(t, d.handler(t, log))
		if got["BatchGetItem"] != 2*3 || got["GetItem"] != sources || d.proxy.Held.Load() != 3*sources {
			t.Errorf("requests %v, %d keys held; want 6 BatchGetItems (3, and 3 for what they left), %d GetItems, %d keys held",
				got, d.proxy.Held.Load(), sources, 3*sources)
		}
		if strings.Contains(log.String(), bulkWarning) {
			t.Errorf("a bulk read read again in full logged a failure: %s", log)
		}
	})
	t.Run("always, for ten sources", func(t *testing.T) {
		d := newDayOf(t, sources)
		d.proxy.SetRule(func(r faultproxy.Request) (*faultproxy.Fault, faultproxy.Hold) {
			if r.Op != "BatchGetItem" {
				return nil, nil
			}
			r.HoldKeysUnprocessed()
			return nil, faultproxy.PKHasPrefix("M#E#svc-00")
		})
		log := &syncBuffer{}
		got := d.storeToday(t, d.handler(t, log))
		const rounds = 8 // shardmap's aheadRounds.Most
		if got["GetItem"] != sources+3*10 || d.proxy.Held.Load() != int64(3*10*rounds) {
			t.Errorf("requests %v, %d keys held; want %d GetItems (the ten sources' three reads on their own), %d keys held (%d rounds)",
				got, d.proxy.Held.Load(), sources+3*10, 3*10*rounds, rounds)
		}
		if !strings.Contains(log.String(), bulkWarning) || !strings.Contains(log.String(), fmt.Sprintf("left unprocessed after %d rounds", rounds)) {
			t.Errorf("keys given up on, not logged: %s", log)
		}
	})
}

// TestBulkReadThrottledFallsBack: every BatchGetItem is throttled, past
// the SDK's retries. Each source reads on its own, as before the bulk
// reads (four GetItems), every event is stored, and the throttle is logged.
func TestBulkReadThrottledFallsBack(t *testing.T) {
	const sources = 60
	d := newDayOf(t, sources)
	d.proxy.SetRule(func(r faultproxy.Request) (*faultproxy.Fault, faultproxy.Hold) {
		if r.Op == "BatchGetItem" {
			return faultproxy.Throttled, nil
		}
		return nil, nil
	})
	log := &syncBuffer{}
	got := d.storeToday(t, d.handler(t, log))
	if got["GetItem"] != 4*sources || got["BatchGetItem"] == 0 {
		t.Errorf("requests %v; want the bulk reads tried and %d GetItems", got, 4*sources)
	}
	if !strings.Contains(log.String(), bulkWarning) || !strings.Contains(log.String(), "ProvisionedThroughputExceeded") {
		t.Errorf("the throttled bulk read is not logged: %s", log)
	}
}

// TestBulkReadCutByTheDeadline: the table answers in 600 ms of a virtual
// clock (testkit/simtime), and the invocation has a second, of which the
// setup may take half (setupShare): its deadline comes during the bulk
// read. Every record is reported, nothing of the setup is written, and the
// log says the bulk read ran out of time; the redelivery, with time enough,
// stores every event once and writes each catalogue entry and shard record
// once.
func TestBulkReadCutByTheDeadline(t *testing.T) {
	const (
		sources = 40
		lag     = 600 * time.Millisecond
	)
	e := newSimEnv(t, true, nil)
	var writes setupWrites
	e.proxy.SetRule(writes.rule)
	want := map[[2]string]bool{}
	var payloads [][]byte
	for i := range sources {
		src := fmt.Sprintf("src-%03d", i)
		want[[2]string{src, "e"}] = true
		payloads = append(payloads, eventJSON(src, "e", fixtureNow.Add(-time.Second)))
	}
	batch := kinesisBatch(payloads...)
	simtime.Run(t, fixtureNow, func(t *testing.T, clk *simtime.Clock) {
		log := &syncBuffer{}
		e.on(t, clk, lag)
		h := New(e.cfg, clk.Client(e.via, lag), Options{Now: clk.Now, Logger: slog.New(slog.NewJSONHandler(log, nil))})
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		resp, err := h.Kinesis(ctx, batch)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.BatchItemFailures) != sources || writes.catalogue.Load()+writes.records.Load() != 0 {
			t.Fatalf("%d of %d records reported, %d catalogue entries and %d records written; want all reported, nothing written",
				len(resp.BatchItemFailures), sources, writes.catalogue.Load(), writes.records.Load())
		}
		if !strings.Contains(log.String(), bulkWarning) || !strings.Contains(log.String(), "deadline") {
			t.Fatalf("the bulk read cut by the deadline is not logged: %s", log)
		}
		ctx, cancel = context.WithTimeout(context.Background(), time.Minute)
		resp, err = h.Kinesis(ctx, events.KinesisEvent{Records: batch.Records})
		cancel()
		if err != nil || len(resp.BatchItemFailures) != 0 {
			t.Fatalf("redelivery: %d records failed, %v", len(resp.BatchItemFailures), err)
		}
		e.assertExactlyOnce(t, want, 0)
		if c, r := writes.catalogue.Load(), writes.records.Load(); c != sources || r != sources {
			t.Fatalf("%d catalogue entries and %d shard records written for %d sources: want each once", c, r, sources)
		}
	})
}
