package ingest

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/shardline/shardline/internal/cloudevent"
	"github.com/shardline/shardline/internal/schema"
	"github.com/shardline/shardline/local/esm"
	"github.com/shardline/shardline/testkit/faultproxy"
	"github.com/shardline/shardline/testkit/simtime"
)

// shardRecords is a Kinesis shard's worth of records: events of three
// sources (some records carry arrays), and some records that are not
// events. It returns the records, the (source, id) of every event, and how
// many records or array elements must end up quarantined.
func shardRecords(n int) ([]events.KinesisEventRecord, map[[2]string]bool, int) {
	want := map[[2]string]bool{}
	bad := 0
	var payloads [][]byte
	for i := range n {
		src := []string{"orders", "iot/fleet-7", "auth #1"}[i%3]
		at := fixtureNow.Add(-time.Duration(i) * time.Second)
		switch {
		case i%50 == 7:
			payloads = append(payloads, []byte(fmt.Sprintf(`{"id":"broken-%d"`, i)))
			bad++
		case i%10 == 0:
			var arr []json.RawMessage
			for j := range 4 {
				id := fmt.Sprintf("a%d-%d", i, j)
				want[[2]string{src, id}] = true
				arr = append(arr, eventJSON(src, id, at))
			}
			b, _ := json.Marshal(arr)
			payloads = append(payloads, b)
		default:
			id := fmt.Sprintf("e%d", i)
			want[[2]string{src, id}] = true
			payloads = append(payloads, eventJSON(src, id, at))
		}
	}
	return kinesisBatch(payloads...).Records, want, bad
}

// assertExactlyOnce counts every item of the table: each event once, each
// quarantined record once, nothing else.
func (e *env) assertExactlyOnce(t *testing.T, want map[[2]string]bool, quarantined int) {
	t.Helper()
	exactlyOnce(t, e.scan(t), want, quarantined)
}

// exactlyOnce is assertExactlyOnce of items, every item of the table, for
// a test that reads them for more checks than that one.
func exactlyOnce(t *testing.T, items []map[string]types.AttributeValue, want map[[2]string]bool, quarantined int) {
	t.Helper()
	seen := map[[2]string]int{}
	q := 0
	for _, it := range items {
		switch pk := s(it, schema.PK); pk[0] {
		case 'E':
			ev := storedEvent(t, it)
			seen[[2]string{ev["source"].(string), ev["id"].(string)}]++
		case 'Q':
			q++
		case 'M', 'S': // shard records and hour indexes, the source catalogue
		default:
			t.Fatalf("unexpected item %q", pk)
		}
	}
	for k := range want {
		if seen[k] != 1 {
			t.Errorf("event %v stored %d times", k, seen[k])
		}
	}
	for k, n := range seen {
		if !want[k] {
			t.Errorf("unexpected event %v (%d times)", k, n)
		}
	}
	if q != quarantined {
		t.Errorf("%d records quarantined, want %d", q, quarantined)
	}
}

// TestFaultMixesLoseAndDuplicateNothing drives 400 records through the
// handler as Lambda's poller would, under each fault mix, and counts the
// table afterwards. Each mix runs on a virtual clock (testkit/simtime):
// the handler's back-off and pacing, and the poller's 3 s invocation
// timeout, run on it, each of the handler's requests waits 5 ms of it
// (40 ms in "latency"), and it stands still while a request is under way,
// so a busy machine changes how long a mix takes, never its verdict. The
// proxy draws its faults outside the clock.
func TestFaultMixesLoseAndDuplicateNothing(t *testing.T) {
	mixes := []struct {
		name string
		mix  faultproxy.Mix
		lag  time.Duration // of every request: DynamoDB's latency
	}{
		{"throttled", faultproxy.Mix{Throttled: 0.4}, 5 * time.Millisecond},
		{"throttling", faultproxy.Mix{Throttling: 0.4}, 5 * time.Millisecond},
		{"request-limit", faultproxy.Mix{LimitExceeded: 0.4}, 5 * time.Millisecond},
		{"server-error", faultproxy.Mix{ServerError: 0.4}, 5 * time.Millisecond},
		{"unprocessed", faultproxy.Mix{Partial: 0.7}, 5 * time.Millisecond},
		{"reset", faultproxy.Mix{Reset: 0.3}, 5 * time.Millisecond},
		{"latency", faultproxy.Mix{}, 40 * time.Millisecond},
		{"everything", faultproxy.Mix{Throttled: 0.1, Throttling: 0.05, LimitExceeded: 0.05, ServerError: 0.05, Reset: 0.1, Partial: 0.5}, 5 * time.Millisecond},
	}
	for i, m := range mixes {
		t.Run(m.name, func(t *testing.T) {
			e := newSimEnv(t, true, nil)
			m.mix.Seed = uint64(i + 1)
			e.proxy.SetRule(m.mix.Rule())
			records, want, bad := shardRecords(400)
			simtime.Run(t, fixtureNow, func(t *testing.T, clk *simtime.Clock) {
				e.on(t, clk, m.lag)
				d := &esm.Driver{Handler: e.h.Kinesis, BatchSize: 100, Timeout: 3 * time.Second, RetryAttempts: 50, Bisect: true}
				res := d.Run(context.Background(), records)
				if len(res.Failed) != 0 {
					t.Fatalf("%d records given up on", len(res.Failed))
				}
				if m.name != "latency" && e.proxy.Faults.Load()+e.proxy.Held.Load() == 0 {
					t.Fatal("the mix injected nothing")
				}
				e.proxy.SetRule(nil)
				e.assertExactlyOnce(t, want, bad)
				t.Logf("%d invocations, %d retries, %d function errors; %d faults, %d items held; %v of the clock",
					res.Invocations, res.Retries, res.Errors, e.proxy.Faults.Load(), e.proxy.Held.Load(), clk.Now().Sub(fixtureNow))
			})
		})
	}
}

// TestDeadlineReportsExactlyTheUnfinished: a 2,000-record batch whose
// writes cannot all finish before the deadline returns before it, reports
// every record not stored, and loses nothing once they are retried.
//
// It runs on a virtual clock (testkit/simtime): each request waits 100 ms
// of it, two at a time, about 100 requests: some 5 s of work against a 3 s
// deadline. The clock stands still while a request is under way, so a busy
// machine cannot make the handler miss the deadline, nor let the work
// finish within it.
//
// "Exactly" has one honest exception: a request in flight when the deadline
// cuts it off may still have been applied by DynamoDB, and its records are
// reported because the handler cannot know. There are at most
// WRITE_CONCURRENCY such requests of 25 items, which bounds those records.
// On the virtual clock the deadline comes while requests wait out their
// 100 ms, before they are sent: none has been seen.
func TestDeadlineReportsExactlyTheUnfinished(t *testing.T) {
	e := newSimEnv(t, false, func(c *Config) { c.WriteConcurrency = 2 })
	records, want, _ := shardRecords(2000)
	simtime.Run(t, fixtureNow, func(t *testing.T, clk *simtime.Clock) {
		e.on(t, clk, 100*time.Millisecond) // ~100 requests, 2 in flight: ~5 s of work
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		start := clk.Now()
		resp, err := e.h.Kinesis(ctx, events.KinesisEvent{Records: records})
		if err != nil {
			t.Fatal(err)
		}
		took := clk.Now().Sub(start)
		if ctx.Err() != nil {
			t.Fatalf("returned %v after the deadline", took-3*time.Second)
		}
		reported := failedSeqs(resp)
		if len(reported) == 0 || len(reported) == len(records) {
			t.Fatalf("%d of %d records reported: the test's timing does not cut the work short", len(reported), len(records))
		}
		// A record is complete when all its events are stored (or it was
		// quarantined). Exactly the incomplete ones must be reported.
		stored := map[string]bool{}
		for _, it := range e.itemsIn(t, "E#") {
			ev := storedEvent(t, it)
			stored[ev["source"].(string)+"\x00"+ev["id"].(string)] = true
		}
		quarantined := map[string]bool{}
		for _, it := range e.itemsIn(t, "Q#") {
			o := it[schema.Origin]
			b, _ := json.Marshal(o)
			var m struct {
				Value map[string]struct{ Value string }
			}
			_ = json.Unmarshal(b, &m)
			quarantined[m.Value["sequence_number"].Value] = true
		}
		overReported := 0
		for _, r := range records {
			complete := quarantined[r.Kinesis.SequenceNumber]
			if !complete {
				raws, _, err := cloudevent.Split(r.Kinesis.Data)
				complete = err == nil
				for _, raw := range raws {
					var ev struct{ Source, ID string }
					if json.Unmarshal(raw, &ev) != nil || !stored[ev.Source+"\x00"+ev.ID] {
						complete = false
					}
				}
			}
			switch {
			case !complete && !reported[r.Kinesis.SequenceNumber]:
				t.Fatalf("record %s is not stored and was not reported: it would be lost", r.Kinesis.SequenceNumber)
			case complete && reported[r.Kinesis.SequenceNumber]:
				overReported++
			}
		}
		if limit := 2 * 25; overReported > limit {
			t.Fatalf("%d stored records reported; requests in flight at the deadline explain at most %d", overReported, limit)
		}
		t.Logf("returned after %v of the clock; %d of %d records reported unfinished, %d of them stored by requests in flight at the deadline",
			took, len(reported), len(records), overReported)
		// Lambda resends from the lowest reported record.
		d := &esm.Driver{Handler: e.h.Kinesis, BatchSize: 2000, Timeout: 10 * time.Second, RetryAttempts: 3}
		lowest := len(records)
		for i, r := range records {
			if reported[r.Kinesis.SequenceNumber] {
				lowest = min(lowest, i)
			}
		}
		if res := d.Run(context.Background(), records[lowest:]); len(res.Failed) != 0 {
			t.Fatalf("retry gave up on %d records", len(res.Failed))
		}
		e.assertExactlyOnce(t, want, 2000/50)
	})
}
