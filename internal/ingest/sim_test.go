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
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/shardline/shardline/internal/adapt"
	"github.com/shardline/shardline/internal/pace"
	"github.com/shardline/shardline/internal/query"
	"github.com/shardline/shardline/internal/schema"
	"github.com/shardline/shardline/local/ddblocal"
	"github.com/shardline/shardline/pkg/bucketing"
	"github.com/shardline/shardline/testkit/faultproxy"
	"github.com/shardline/shardline/testkit/simtime"
)

// The pieces of the heat simulations (overload_test.go, ramp_test.go and
// others): Kinesis-like delivery to warm containers, a tally of what the
// partition model throttled by event time, and a reader of every event on
// one path. A simulation runs on a virtual clock (testkit/simtime): its
// time advances only when every container, the model and the loop that
// drives them wait on it, so a busy machine changes how long it takes,
// never what it measures. Its DynamoDB clients are the clock's
// (simtime.Clock.Client), which wait lag before each request, as
// DynamoDB's latency does; the fault proxy runs outside the clock and its
// partition model reads the time each request was sent at
// (simtime.Clock.Seen).

// lag is DynamoDB's latency in a simulation: what each request waits of
// the virtual clock.
const lag = 5 * time.Millisecond

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
	name   string
	h      *Handler
	pad    int  // bytes of data each event carries beside its id
	reject bool // records that are not events (no type): all quarantined
	// coarse stamps each event's time to this precision (a source whose
	// clock reads to the minute, say); its arrival stays exact.
	coarse time.Duration

	mu      sync.Mutex
	records []rampEvent
	next    int // sequence number of records[0]
}

// push puts es on the shard.
func (q *shardQueue) push(es ...rampEvent) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.records = append(q.records, es...)
}

// waiting is how many records wait on the shard, acknowledged by no
// invocation yet, and the oldest one's time.
func (q *shardQueue) waiting() (n int, oldest time.Time) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.records) > 0 {
		oldest = q.records[0].at
	}
	return len(q.records), oldest
}

// deliver invokes the handler once with the queue's head, drops what it
// acknowledged, and returns how many records it delivered.
func (q *shardQueue) deliver(t *testing.T, source string, batch int, timeout time.Duration) int {
	q.mu.Lock()
	n := min(batch, len(q.records))
	head, next := q.records[:n:n], q.next
	q.mu.Unlock()
	if n == 0 {
		return 0
	}
	var ev events.KinesisEvent
	for i, e := range head {
		seq := fmt.Sprintf("%s%039d", q.name, next+i)
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
	q.mu.Lock()
	q.records = q.records[done:]
	q.next += done
	q.mu.Unlock()
	return n
}

// event is the record data of e: eventJSON, with q.pad bytes of data.
func (q *shardQueue) event(source string, e rampEvent) []byte {
	if q.reject {
		b, _ := json.Marshal(map[string]any{"specversion": "1.0", "id": e.id, "source": source, "note": "no type"})
		return b
	}
	at := e.at
	if q.coarse > 0 {
		at = at.Truncate(q.coarse)
	}
	if q.pad == 0 {
		return eventJSON(source, e.id, at)
	}
	b, _ := json.Marshal(map[string]any{
		"specversion": "1.0", "id": e.id, "source": source, "type": "test.event",
		"time": at.Format(time.RFC3339Nano), "data": map[string]any{"n": e.id, "pad": strings.Repeat("x", q.pad)},
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
func readAll(t *testing.T, c *dynamodb.Client, table string, now func() time.Time, source string, from, to time.Time, path string) []string {
	t.Helper()
	r := &query.Reader{Client: c, Table: table, Now: now}
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
func readsOnce(t *testing.T, label string, c *dynamodb.Client, table string, now func() time.Time, source string, from, to time.Time, want map[string]bool) {
	t.Helper()
	for _, path := range []string{query.PathGSI, query.PathScatter, "consistent"} {
		seen := map[string]int{}
		ids := readAll(t, c, table, now, source, from, to, path)
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
// through url with cfg: Lambda's fleet for a stream of n shards. Each
// container has its options from opts (its own policy and pacer, unless
// opts shares them), and its own client on clk.
func fleet(n int, cfg Config, clk *simtime.Clock, url string, opts func() Options) []*shardQueue {
	queues := make([]*shardQueue, n)
	for i := range queues {
		queues[i] = &shardQueue{name: fmt.Sprint(i + 1), h: New(cfg, clk.Client(url, lag), opts())}
	}
	return queues
}

// poll invokes each queue's container as Lambda polls a stream's shards
// side by side: with up to batch records as soon as its last invocation
// returned and records wait, else a second later. Each invocation has
// timeout, the function's. It polls until stop is called, which waits for
// the invocations under way.
func poll(t *testing.T, queues []*shardQueue, source string, batch int, timeout time.Duration) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	for _, q := range queues {
		wg.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
				}
				if q.deliver(t, source, batch, timeout) > 0 {
					continue
				}
				select {
				case <-done:
					return
				case <-time.After(time.Second):
				}
			}
		})
	}
	return func() {
		close(done)
		wg.Wait()
	}
}

// waiting is how many records wait on the queues, and the oldest one's
// time.
func waiting(queues []*shardQueue) (n int, oldest time.Time) {
	for _, q := range queues {
		k, at := q.waiting()
		n += k
		if k > 0 && (oldest.IsZero() || at.Before(oldest)) {
			oldest = at
		}
	}
	return n, oldest
}

// producer puts events on queues, round robin, at rate(at) events a second
// at simulated time at from start: the traffic of a simulation.
type producer struct {
	queues []*shardQueue
	start  time.Time
	rate   func(at time.Duration) float64
	prefix string // of the events' ids; default "ev-"
	source string // of the events, when not the queue's

	all  []rampEvent // every event made, in order
	due  float64     // events owed, fractional
	last time.Duration
}

// until makes the events of the simulated time from the last call to now,
// evenly spaced.
func (p *producer) until(now time.Duration) {
	for s := p.last; s < now; s += 100 * time.Millisecond {
		p.due += p.rate(s) * min(100*time.Millisecond, now-s).Seconds()
	}
	k := int(p.due)
	p.due -= float64(k)
	prefix := p.prefix
	if prefix == "" {
		prefix = "ev-"
	}
	for i := range k {
		at := p.start.Add(p.last + (now-p.last)*time.Duration(i)/time.Duration(k))
		e := rampEvent{id: fmt.Sprintf("%s%06d", prefix, len(p.all)), at: at.Truncate(time.Millisecond), source: p.source}
		p.queues[len(p.all)%len(p.queues)].push(e)
		p.all = append(p.all, e)
	}
	p.last = now
}

// ids is the ids of the events made, as a set.
func (p *producer) ids() map[string]bool {
	want := make(map[string]bool, len(p.all))
	for _, e := range p.all {
		want[e.id] = true
	}
	return want
}

// countEvents is how many event items source has on day, under any of its
// first shards table keys: a simulation's events are too many to read
// back whole, and a Query of a key's items reads only those.
func countEvents(t *testing.T, c *dynamodb.Client, table, source, day string, shards int) int {
	t.Helper()
	n := 0
	for shard := range shards {
		in := &dynamodb.QueryInput{
			TableName:                 aws.String(table),
			Select:                    types.SelectCount,
			KeyConditionExpression:    aws.String("#pk = :pk"),
			ExpressionAttributeNames:  map[string]string{"#pk": schema.PK},
			ExpressionAttributeValues: map[string]types.AttributeValue{":pk": &types.AttributeValueMemberS{Value: bucketing.Stream{Space: bucketing.Events, Source: source}.PK(day, shard)}},
			ConsistentRead:            aws.Bool(true),
		}
		if err := ddblocal.Query(context.Background(), c, in, func(out *dynamodb.QueryOutput) error {
			n += int(out.Count)
			return nil
		}); err != nil {
			t.Fatalf("count %s's events: %v", source, err)
		}
	}
	return n
}

// between is the ids of events whose time is in [from, to).
func between(all []rampEvent, from, to time.Time) map[string]bool {
	want := map[string]bool{}
	for _, e := range all {
		if !e.at.Before(from) && e.at.Before(to) {
			want[e.id] = true
		}
	}
	return want
}

// scaled is a container's options for a simulation whose traffic is scale
// times smaller than life: DynamoDB's nominal figure of a key's ceiling,
// scaled, as the policy's and the pacer's first guess (never the model's
// ceiling, which they must learn), and the policy's thresholds, counts of
// items, scaled with it. Each call makes a container's own.
func scaled(clk *simtime.Clock, scale float64, log *slog.Logger) func() Options {
	return func() Options {
		nominal := bucketing.PartitionWCU / scale
		return Options{Now: clk.Now, Logger: log,
			Policy: &adapt.Policy{KeyWCU: nominal, MinItems: max(5, int(adapt.DefaultMinItems/scale)), MinThrottled: 2},
			Pacer:  &pace.Pacer{KeyWCU: nominal}}
	}
}

// drive runs traffic onto queues until load has passed, then until the
// queues have drained, a simulated second at a time, polled as Lambda
// polls them (poll, for source). It returns what model judged and held in
// each second and how long the oldest record waited; it fails t when the
// backlog has not drained by giveUp.
func drive(t *testing.T, clk *simtime.Clock, start time.Time, queues []*shardQueue, source string, model *faultproxy.Partitions,
	load, giveUp time.Duration, traffic ...*producer) (samples []sample, maxAge time.Duration) {
	t.Helper()
	stop := poll(t, queues, source, 500, time.Minute) // the stack's BatchSize and IngestTimeout
	defer stop()
	for {
		now := clk.Now().Sub(start)
		n, oldest := waiting(queues)
		if now >= giveUp {
			stop()
			t.Fatalf("the backlog has not drained after %v: %d records waiting", giveUp, n)
		}
		if now < load {
			for _, p := range traffic {
				p.until(now)
			}
		} else if n == 0 {
			return samples, maxAge
		}
		if !oldest.IsZero() {
			maxAge = max(maxAge, clk.Now().Sub(oldest))
		}
		seen, held := model.Seen.Load(), model.Throttled.Load()
		time.Sleep(time.Second)
		samples = append(samples, sample{at: now, seen: model.Seen.Load() - seen, held: model.Throttled.Load() - held})
	}
}
