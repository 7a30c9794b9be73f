package ingest

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/shardline/shardline/internal/cloudevent"
	"github.com/shardline/shardline/local/esm"
	"github.com/shardline/shardline/testkit/faultproxy"
	"github.com/shardline/shardline/testkit/simtime"
)

// setupBatch is a batch of n records over sources sources, each source with
// events on two days (yesterday and today), every source new on both:
// 2 × sources first-of-day setups. want names each event (source, id);
// streamOf names each record's (source, day).
func setupBatch(sources, n int) (recs []events.KinesisEventRecord, want map[[2]string]bool, streamOf []string) {
	want = map[[2]string]bool{}
	var payloads [][]byte
	for i := range n {
		src := fmt.Sprintf("src-%03d", i%sources)
		at := fixtureNow.Add(-time.Duration(i) * time.Second)
		day := "today"
		if (i/sources)%2 == 0 {
			at, day = at.Add(-24*time.Hour), "yesterday"
		}
		id := fmt.Sprintf("e%03d", i)
		want[[2]string{src, id}] = true
		payloads = append(payloads, eventJSON(src, id, at))
		streamOf = append(streamOf, src+" "+day)
	}
	return kinesisBatch(payloads...).Records, want, streamOf
}

// setupWrites counts, through the proxy, the PutItems of catalogue entries
// (partition key "S#...") and of shard records ("M#...").
type setupWrites struct{ catalogue, records atomic.Int64 }

func (w *setupWrites) rule(r faultproxy.Request) (*faultproxy.Fault, faultproxy.Hold) {
	if r.Op != "PutItem" {
		return nil, nil
	}
	var in struct{ Item map[string]struct{ S string } }
	if json.Unmarshal(r.Body, &in) == nil {
		switch pk := in.Item["pk"].S; {
		case strings.HasPrefix(pk, "S#"):
			w.catalogue.Add(1)
		case strings.HasPrefix(pk, "M#"):
			w.records.Add(1)
		}
	}
	return nil, nil
}

// TestSlowSetupStoresWhatIsSetUp: issue 28's item 9. One warm handler gets
// a batch of 200 records over 80 sources × 2 days, all new, on a DynamoDB
// whose every request takes 100 ms: setting a (source, day) up takes three
// requests one after another, a source's two days six, 64 sources at a
// time, some 1.2 s in all against an invocation's 1.25 s (1.125 s once the
// handler keeps its margin to answer). It used to spend all of it on the
// setup and store nothing, on every delivery: with the setup given all the
// time (setupShare 1, put in by hand) the first invocation stores nothing
// and the test fails. 80 sources, more than 64, so that the setup takes a
// second round and outlasts the invocation; 200 wrote 2.4 times the
// bookkeeping for the same verdicts.
//
// Now the first invocation stores the events of every (source, day) set up
// within the setup's share of the time, reports exactly the records of the
// others, and the redeliveries, from the lowest record reported as Lambda
// sends them, finish the batch with every event stored once. A setup the
// deadline cut resumes where it stopped: each catalogue entry and each
// shard record is written once in all.
//
// It runs on a virtual clock (testkit/simtime): the 100 ms is the clock's
// (simtime.Clock.Client), which stands still while a request is under way,
// so the machine's speed cannot change the verdict. The fault proxy in
// the path counts the setup's writes.
func TestSlowSetupStoresWhatIsSetUp(t *testing.T) {
	const (
		sources = 80
		n       = 200
		lag     = 100 * time.Millisecond
		timeout = 1250 * time.Millisecond
	)
	e := newSimEnv(t, true, nil)
	var writes setupWrites
	e.proxy.SetRule(writes.rule)
	recs, want, streamOf := setupBatch(sources, n)
	simtime.Run(t, fixtureNow, func(t *testing.T, clk *simtime.Clock) {
		e.on(t, clk, lag)
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		resp, err := e.h.Kinesis(ctx, events.KinesisEvent{Records: recs})
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		reported := failedSeqs(resp)
		complete := e.completeRecords(t, recs)
		streams := map[string][2]int{} // (source, day) -> records complete, records in all
		for i, r := range recs {
			c := streams[streamOf[i]]
			if complete[i] {
				c[0]++
			}
			c[1]++
			streams[streamOf[i]] = c
			if complete[i] == reported[r.Kinesis.SequenceNumber] {
				t.Fatalf("record %d (%s): complete %v, reported %v: want exactly the incomplete ones reported", i, streamOf[i], complete[i], !complete[i])
			}
		}
		done := 0
		for s, c := range streams {
			if c[0] != 0 && c[0] != c[1] {
				t.Fatalf("%s: %d of its %d records stored: a (source, day) set up writes all its events", s, c[0], c[1])
			}
			if c[0] > 0 {
				done++
			}
		}
		if done == 0 || done == len(streams) {
			t.Fatalf("%d of %d (source, day)s stored by the first invocation: want some, and not all (the test's timing must cut the setup short)", done, len(streams))
		}
		t.Logf("first invocation: %d of %d (source, day)s set up and stored, %d of %d records reported, after %v of the clock",
			done, len(streams), len(reported), n, clk.Now().Sub(fixtureNow))

		lowest := n
		for i, r := range recs {
			if reported[r.Kinesis.SequenceNumber] {
				lowest = min(lowest, i)
			}
		}
		d := &esm.Driver{Handler: e.h.Kinesis, BatchSize: n, Timeout: timeout, RetryAttempts: 10}
		res := d.Run(context.Background(), recs[lowest:])
		if len(res.Failed) != 0 {
			t.Fatalf("%d records given up on after %d invocations", len(res.Failed), res.Invocations)
		}
		e.assertExactlyOnce(t, want, 0)
		if c, r := writes.catalogue.Load(), writes.records.Load(); c != int64(len(streams)) || r != int64(len(streams)) {
			t.Fatalf("%d catalogue entries and %d shard records written for %d (source, day)s: want each once", c, r, len(streams))
		}
		t.Logf("%d redeliveries finished the batch; %v of the clock in all; %d GetItem, %d BatchGetItem, %d PutItem, %d UpdateItem, %d BatchWriteItem",
			res.Invocations, clk.Now().Sub(fixtureNow), e.proxy.Count("GetItem"), e.proxy.Count("BatchGetItem"), e.proxy.Count("PutItem"), e.proxy.Count("UpdateItem"), e.proxy.Count("BatchWriteItem"))
	})
}

// completeRecords says, for each record, whether every event of it is
// stored.
func (e *env) completeRecords(t *testing.T, recs []events.KinesisEventRecord) []bool {
	t.Helper()
	stored := map[[2]string]bool{}
	for _, it := range e.itemsIn(t, "E#") {
		ev := storedEvent(t, it)
		stored[[2]string{ev["source"].(string), ev["id"].(string)}] = true
	}
	out := make([]bool, len(recs))
	for i, r := range recs {
		raws, _, err := cloudevent.Split(r.Kinesis.Data)
		out[i] = err == nil
		for _, raw := range raws {
			var ev struct{ Source, ID string }
			if json.Unmarshal(raw, &ev) != nil || !stored[[2]string{ev.Source, ev.ID}] {
				out[i] = false
			}
		}
	}
	return out
}

// TestSlowSetupAPIStoresWhatIsSetUp: the API's side of item 9. A request
// of 130 events from 130 new sources, on a DynamoDB whose every request
// takes 100 ms of a virtual clock, with 0.8 s to work: the setup (three
// requests one after another a source, 64 sources at a time: three rounds)
// would take 0.9 s. It used to spend all of it on the setup and answer 503
// with nothing stored (setupShare 1, put in by hand, fails the test so).
// 130 sources are the fewest that need three rounds, as a share of half
// the time that finishes one round and not all of them needs: 200 wrote
// half as much bookkeeping again. Now the sources set up within half the time have their
// events stored, the answer is 503 with "accepted" counting them and
// "retry" listing exactly the others, and sending those again until none is
// left stores them, every event once, each retry storing more.
func TestSlowSetupAPIStoresWhatIsSetUp(t *testing.T) {
	const sources = 2*lookups + 2
	e := newSimEnv(t, false, nil)
	want := map[[2]string]bool{}
	evs := make([]json.RawMessage, sources)
	for i := range evs {
		src, id := fmt.Sprintf("api-%03d", i), fmt.Sprintf("a%03d", i)
		want[[2]string{src, id}] = true
		evs[i] = eventJSON(src, id, fixtureNow.Add(-time.Minute))
	}
	simtime.Run(t, fixtureNow, func(t *testing.T, clk *simtime.Clock) {
		e.client = clk.Client(e.endpoint, 0)
		h := checked(t, New(e.cfg, clk.Client(e.via, 100*time.Millisecond), Options{Now: clk.Now, APIBudget: 800 * time.Millisecond}))
		body, _ := json.Marshal(evs)
		// API Gateway stamps when it received each request: now.
		send := func(body []byte) events.APIGatewayV2HTTPResponse {
			req := post(string(body), "application/json")
			req.RequestContext.TimeEpoch = clk.Now().UnixMilli()
			resp, err := h.HTTP(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			return resp
		}
		resp := send(body)
		r := decodeResponse(t, resp.Body)
		if resp.StatusCode != 503 || r.Accepted == 0 || r.Accepted+len(r.Retry) != sources {
			t.Fatalf("status %d, %d accepted, %d to retry: want 503, some accepted and the rest listed", resp.StatusCode, r.Accepted, len(r.Retry))
		}
		stored := map[string]bool{}
		for _, it := range e.itemsIn(t, "E#") {
			stored[storedEvent(t, it)["id"].(string)] = true
		}
		var again []json.RawMessage
		for _, x := range r.Retry {
			if stored[x.ID] {
				t.Fatalf("event %d (%s) is stored and listed to retry", x.Index, x.ID)
			}
			again = append(again, evs[x.Index])
		}
		if len(stored) != r.Accepted {
			t.Fatalf("%d events stored, %d accepted", len(stored), r.Accepted)
		}
		t.Logf("first request: %d of %d events stored, %d to retry, after %v of the clock", r.Accepted, sources, len(r.Retry), clk.Now().Sub(fixtureNow))
		// A client sends what "retry" lists again, until nothing is left.
		tries := 0
		for ; len(again) > 0; tries++ {
			if tries == 5 {
				t.Fatalf("%d events still not stored after %d retries", len(again), tries)
			}
			body, _ = json.Marshal(again)
			resp := send(body)
			r := decodeResponse(t, resp.Body)
			if resp.StatusCode == 503 && r.Accepted == 0 {
				t.Fatalf("retry %d: nothing stored of %d events: the setup did not resume", tries+1, len(again))
			}
			next := again[:0:0]
			for _, x := range r.Retry {
				next = append(next, again[x.Index])
			}
			again = next
		}
		e.assertExactlyOnce(t, want, 0)
		t.Logf("%d retries stored the rest", tries)
	})
}
