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

	"github.com/shardline/shardline/internal/adapt"
	"github.com/shardline/shardline/internal/backoff"
	"github.com/shardline/shardline/internal/pace"
	"github.com/shardline/shardline/internal/query"
	"github.com/shardline/shardline/internal/schema"
	"github.com/shardline/shardline/pkg/bucketing"
	"github.com/shardline/shardline/testkit/faultproxy"
	"github.com/shardline/shardline/testkit/testddb"
)

// The pieces of the compressed-time ramp test (ramp_test.go): a fast clock,
// Kinesis-like delivery to a warm container, a tally of what the partition
// model throttled by event time, and a reader of every event on one path.

// simClock runs speed times faster than the wall clock from start.
//
// The simulations that run on one spend most of their wall time waiting
// for it, so they run in parallel with each other: after the package's
// other tests, at most -test.parallel at once (GOMAXPROCS by default, two
// on a 2-core machine), each on its own table, proxy and containers.
// Starved of CPU, a simulation's delivery loop stalls, then catches up in
// a burst: the writers' summed demand rises once, steeply. Until the
// policy took only a steady rise for a ramp (adapt.Policy.rising), the
// ramp read such a burst eight minutes ahead and compounded its raises,
// beside another simulation in 1 make test of 9.
type simClock struct {
	start, real time.Time
	speed       float64
}

func (c *simClock) now() time.Time {
	return c.start.Add(time.Duration(float64(time.Since(c.real)) * c.speed))
}

// sleep waits d of the clock: d/speed of the wall clock.
func (c *simClock) sleep(ctx context.Context, d time.Duration) error {
	return backoff.SleepWithin(ctx, time.Duration(float64(d)/c.speed))
}

// rampEvent is one event of the ramp, by its id and time, and its source
// when it is not the queue's.
type rampEvent struct {
	id     string
	at     time.Time
	source string
}

// shardQueue plays one Kinesis shard and its event source mapping with
// ReportBatchItemFailures: records are delivered in order, at most batch at
// a time, and after a partial failure the mapping checkpoints the records
// before the first failed one and delivers again from there, records that
// were stored after it included.
type shardQueue struct {
	name    string
	h       *Handler
	records []rampEvent
	next    int  // sequence number of records[0]
	pad     int  // bytes of data each event carries beside its id
	reject  bool // records that are not events (no type): all quarantined
}

// deliver invokes the handler once with the queue's head, drops what it
// acknowledged, and returns how many records it delivered.
func (q *shardQueue) deliver(t *testing.T, source string, batch int, timeout time.Duration) int {
	n := min(batch, len(q.records))
	if n == 0 {
		return 0
	}
	var ev events.KinesisEvent
	for i, e := range q.records[:n] {
		seq := fmt.Sprintf("%s%039d", q.name, q.next+i)
		src := source
		if e.source != "" {
			src = e.source
		}
		ev.Records = append(ev.Records, events.KinesisEventRecord{
			EventSource:    "aws:kinesis",
			EventSourceArn: "arn:aws:kinesis:us-east-1:000000000000:stream/ramp",
			EventID:        "shardId-00000000000" + q.name + ":" + seq,
			Kinesis: events.KinesisRecord{
				Data:                        q.event(src, e),
				SequenceNumber:              seq,
				ApproximateArrivalTimestamp: events.SecondsEpochTime{Time: e.at},
			},
		})
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	resp, err := q.h.Kinesis(ctx, ev)
	if err != nil {
		t.Errorf("invoke: %v", err)
		return n
	}
	done := n
	for _, f := range resp.BatchItemFailures {
		for i := range n {
			if ev.Records[i].Kinesis.SequenceNumber == f.ItemIdentifier {
				done = min(done, i)
			}
		}
	}
	q.records = q.records[done:]
	q.next += done
	return n
}

// event is the record data of e: eventJSON, with q.pad bytes of data.
func (q *shardQueue) event(source string, e rampEvent) []byte {
	if q.reject {
		b, _ := json.Marshal(map[string]any{"specversion": "1.0", "id": e.id, "source": source, "note": "no type"})
		return b
	}
	if q.pad == 0 {
		return eventJSON(source, e.id, e.at)
	}
	b, _ := json.Marshal(map[string]any{
		"specversion": "1.0", "id": e.id, "source": source, "type": "test.event",
		"time": e.at.Format(time.RFC3339Nano), "data": map[string]any{"n": e.id, "pad": strings.Repeat("x", q.pad)},
	})
	return b
}

// verdicts counts the items the partition model judged and held back, by the
// minute of the event's time.
type verdicts struct {
	mu         sync.Mutex
	seen, held map[int64]int64
}

// wrap is rule, counting its verdicts on each item.
func (ty *verdicts) wrap(t *testing.T, rule faultproxy.Rule) faultproxy.Rule {
	ty.seen, ty.held = map[int64]int64{}, map[int64]int64{}
	return func(req faultproxy.Request) (*faultproxy.Fault, faultproxy.Hold) {
		f, hold := rule(req)
		if hold == nil {
			return f, nil
		}
		return f, func(item map[string]json.RawMessage) bool {
			held := hold(item)
			var sk struct{ S string }
			if err := json.Unmarshal(item[schema.SK], &sk); err != nil {
				t.Errorf("item without a sort key: %v", err)
				return held
			}
			at, _, err := bucketing.ParseSortKey(sk.S)
			if err != nil {
				t.Errorf("sort key %q: %v", sk.S, err)
				return held
			}
			m := at.Unix() / 60
			ty.mu.Lock()
			defer ty.mu.Unlock()
			ty.seen[m]++
			if held {
				ty.held[m]++
			}
			return held
		}
	}
}

// from is what was judged and held of the writes of events timed at or
// after t.
func (ty *verdicts) from(t time.Time) (seen, held int64) {
	ty.mu.Lock()
	defer ty.mu.Unlock()
	for m, n := range ty.seen {
		if m >= t.Unix()/60 {
			seen += n
			held += ty.held[m]
		}
	}
	return seen, held
}

// sample is what the model judged and held during one turn of the test.
type sample struct {
	at         time.Duration
	seen, held int64
}

// timeline is the share of writes throttled per simulated minute.
func timeline(samples []sample) string {
	var b strings.Builder
	var seen, held int64
	minute := time.Duration(0)
	for _, s := range samples {
		if s.at >= minute+time.Minute {
			fmt.Fprintf(&b, " %d:%d/%d", int(minute/time.Minute), held, seen)
			seen, held = 0, 0
			minute = s.at.Truncate(time.Minute)
		}
		seen += s.seen
		held += s.held
	}
	return b.String()
}

// readAll pages through a source's events in [from, to) on one path:
// "gsi", "scatter", or "consistent", and returns their ids in order.
func readAll(t *testing.T, endpoint, table string, now func() time.Time, source string, from, to time.Time, path string) []string {
	t.Helper()
	r := &query.Reader{Client: testddb.Client(t, endpoint), Table: table, Now: now}
	p := query.Params{Source: source, From: from, To: to, Limit: 1000, Order: query.Asc}
	switch path {
	case "consistent":
		p.Consistent = true
	default:
		r.Path = path
	}
	var ids []string
	for range 1000 {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		pg, err := r.Events(ctx, p)
		cancel()
		if err != nil {
			t.Fatalf("read %s: %v", path, err)
		}
		for _, it := range pg.Items {
			var ev struct{ ID string }
			if err := json.Unmarshal([]byte(s(it, schema.Event)), &ev); err != nil {
				t.Fatalf("stored event: %v", err)
			}
			ids = append(ids, ev.ID)
		}
		if pg.Next == nil {
			return ids
		}
		p.Cursor = pg.Next
	}
	t.Fatalf("read %s: more than 1,000 pages", path)
	return nil
}

// readsOnce reads want's source in [from, to) on every path and reports
// any event of want missing or read twice, and any read that is not in
// want.
func readsOnce(t *testing.T, label, endpoint, table string, now func() time.Time, source string, from, to time.Time, want map[string]bool) {
	t.Helper()
	for _, path := range []string{query.PathGSI, query.PathScatter, "consistent"} {
		seen := map[string]int{}
		ids := readAll(t, endpoint, table, now, source, from, to, path)
		for _, id := range ids {
			seen[id]++
		}
		missing, twice, stray := 0, 0, 0
		for id := range want {
			if seen[id] == 0 {
				missing++
			}
		}
		for id, n := range seen {
			if n > 1 {
				twice++
			}
			if !want[id] {
				stray++
			}
		}
		if missing+twice+stray > 0 {
			t.Errorf("%s, %s path: %d events read, want %d: %d missing, %d read twice, %d not expected",
				label, path, len(ids), len(want), missing, twice, stray)
		}
	}
}

// fleet is n Kinesis shards, each with its own warm container writing
// through url with cfg: Lambda's fleet for a stream of n shards. The
// containers' clocks, waits and pacing run on clk, and their policy and
// pacer take keyWCU as a key's ceiling; they log to log.
func fleet(t *testing.T, n int, cfg Config, url string, clk *simClock, keyWCU float64, log *slog.Logger) []*shardQueue {
	queues := make([]*shardQueue, n)
	for i := range queues {
		pol := &adapt.Policy{KeyWCU: keyWCU, MinItems: 5, MinThrottled: 2, Window: 20 * time.Second}
		queues[i] = &shardQueue{name: fmt.Sprint(i + 1), h: New(cfg, testddb.Client(t, url), Options{
			Now: clk.now, Sleep: clk.sleep, Policy: pol, Pacer: &pace.Pacer{KeyWCU: keyWCU, Now: clk.now}, Logger: log,
		})}
	}
	return queues
}

// deliverAll invokes every shard's container once, all at once, as Lambda
// polls a stream's shards side by side.
func deliverAll(t *testing.T, queues []*shardQueue, source string, batch int, timeout time.Duration) {
	var wg sync.WaitGroup
	for _, q := range queues {
		wg.Add(1)
		go func() {
			defer wg.Done()
			q.deliver(t, source, batch, timeout)
		}()
	}
	wg.Wait()
}
