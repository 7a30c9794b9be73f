package producer_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/shardline/shardline/internal/ingest"
	"github.com/shardline/shardline/internal/kpl"
	"github.com/shardline/shardline/local/kinesislocal"
	"github.com/shardline/shardline/local/kinesisread"
	"github.com/shardline/shardline/pkg/producer"
	"github.com/shardline/shardline/testkit/faultproxy"
	"github.com/shardline/shardline/testkit/testddb"
	"github.com/shardline/shardline/testkit/testkinesis"
)

func TestMain(m *testing.M) { testddb.MainWith(m, testkinesis.Start) }

// client is a Kinesis client of endpoint that makes each request once, so
// that the producer's own retries, not the SDK's, meet injected faults.
func client(endpoint string) *kinesis.Client {
	c := kinesislocal.Client(endpoint)
	return kinesis.New(c.Options(), func(o *kinesis.Options) { o.RetryMaxAttempts = 1 })
}

// stream makes a stream for the test and returns its ARN and name.
func stream(t *testing.T, shards int) (kinesisread.ARN, string) {
	t.Helper()
	arn, err := kinesisread.ParseARN(testkinesis.Stream(t, shards))
	if err != nil {
		t.Fatal(err)
	}
	return arn, arn.Name
}

// readAll reads every record of the stream, as Lambda would hand them on.
// It reads with the SDK's default retries, straight from kinesalite: the
// read-back checks the producer and is not under test, and kinesalite now
// and then closes a kept-alive connection under a request.
func readAll(t *testing.T, arn kinesisread.ARN) []events.KinesisEventRecord {
	t.Helper()
	ctx := context.Background()
	c := kinesislocal.Client(testkinesis.Endpoint(t))
	shards, err := kinesisread.Shards(ctx, c, arn)
	if err != nil {
		t.Fatal(err)
	}
	var out []events.KinesisEventRecord
	for _, s := range shards {
		it, err := kinesisread.Iterator(ctx, c, arn, aws.ToString(s.ShardId), kinesisread.TrimHorizon)
		if err != nil {
			t.Fatal(err)
		}
		for it != nil {
			p, err := kinesisread.Read(ctx, c, arn, aws.ToString(s.ShardId), it, 10000)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, p.Records...)
			if p.AtTip || len(p.Records) == 0 {
				break
			}
			it = p.Next
		}
	}
	return out
}

// ids are the event ids the stream holds, aggregates read through.
func ids(t *testing.T, recs []events.KinesisEventRecord) []string {
	t.Helper()
	var out []string
	add := func(data []byte) {
		var ev struct{ ID string }
		if err := json.Unmarshal(data, &ev); err != nil {
			t.Fatalf("record %q: %v", data, err)
		}
		out = append(out, ev.ID)
	}
	for _, r := range recs {
		if !kpl.IsAggregate(r.Kinesis.Data) {
			add(r.Kinesis.Data)
			continue
		}
		subs, err := kpl.Deaggregate(r.Kinesis.Data, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range subs {
			add(s.Data)
		}
	}
	return out
}

// wantOnce fails unless got holds each of want exactly once and nothing else.
func wantOnce(t *testing.T, got, want []string) {
	t.Helper()
	g, w := slices.Clone(got), slices.Clone(want)
	slices.Sort(g)
	slices.Sort(w)
	if !slices.Equal(g, w) {
		t.Fatalf("stream holds %d events, want %d distinct, each once", len(g), len(w))
	}
}

func ev(i int, pad int) map[string]any {
	return map[string]any{
		"specversion": "1.0", "source": "test/producer", "type": "t",
		"id": fmt.Sprintf("e-%05d", i), "data": map[string]any{"pad": strings.Repeat("x", pad)},
	}
}

func evIDs(from, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("e-%05d", from+i)
	}
	return out
}

// recorder counts the PutRecords requests going through it.
type recorder struct {
	producer.KinesisAPI
	mu      sync.Mutex
	batches [][]types.PutRecordsRequestEntry
}

func (r *recorder) PutRecords(ctx context.Context, in *kinesis.PutRecordsInput, o ...func(*kinesis.Options)) (*kinesis.PutRecordsOutput, error) {
	r.mu.Lock()
	r.batches = append(r.batches, in.Records)
	r.mu.Unlock()
	return r.KinesisAPI.PutRecords(ctx, in, o...)
}

func (r *recorder) sizes() []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []int
	for _, b := range r.batches {
		out = append(out, len(b))
	}
	return out
}

// outcomes collects the outcomes a producer reports.
type outcomes struct {
	mu  sync.Mutex
	ok  map[string]int
	bad map[string]error
}

func newOutcomes() *outcomes { return &outcomes{ok: map[string]int{}, bad: map[string]error{}} }

func (o *outcomes) record(r producer.Outcome) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if r.Err != nil {
		o.bad[r.ID] = r.Err
		return
	}
	o.ok[r.ID]++
}

func TestKinesisBatchLimits(t *testing.T) {
	t.Parallel() // its own stream; it waits on kinesalite and DynamoDB Local more than on the CPU
	arn, name := stream(t, 2)
	c := client(testkinesis.Endpoint(t))
	rec := &recorder{KinesisAPI: c}
	p := producer.NewKinesis(rec, name, producer.WithLinger(time.Hour))
	ctx := context.Background()
	for i := range 1200 {
		if err := p.Put(ctx, ev(i, 10)); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if got := rec.sizes(); !slices.Equal(got, []int{500, 500, 200}) {
		t.Fatalf("count limit: batches of %v records, want [500 500 200]", got)
	}
	// 12 events of 900 KiB: five fit 5 MiB, six do not.
	for i := range 12 {
		if err := p.Put(ctx, ev(1200+i, 900<<10)); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if got := rec.sizes()[3:]; !slices.Equal(got, []int{5, 5, 2}) {
		t.Fatalf("byte limit: batches of %v records, want [5 5 2]", got)
	}
	wantOnce(t, ids(t, readAll(t, arn)), evIDs(0, 1212))
	if s := p.Stats(); s.Put != 1212 || s.Failed != 0 || s.Retried != 0 || s.Requests != 6 {
		t.Fatalf("stats %+v", s)
	}
	if err := p.Put(ctx, ev(0, 1<<20)); !errors.Is(err, producer.ErrTooLarge) {
		t.Fatalf("Put of a 1 MiB event: %v, want ErrTooLarge", err)
	}
}

// TestKinesisThrottling: the fault proxy in front of kinesalite throttles
// whole PutRecords requests; the producer backs off and sends them again.
func TestKinesisThrottling(t *testing.T) {
	arn, name := stream(t, 1)
	proxy := faultproxy.For(t, testkinesis.Endpoint(t))
	proxy.SetRule(func(r faultproxy.Request) (*faultproxy.Fault, faultproxy.Hold) {
		if r.Op == "PutRecords" && r.N <= 3 {
			return faultproxy.Throttled, nil
		}
		return nil, nil
	})
	out := newOutcomes()
	p := producer.NewKinesis(client(proxy.URL), name, producer.WithLinger(time.Hour), producer.WithRetries(10, time.Millisecond, 20*time.Millisecond), producer.WithOnResult(out.record))
	ctx := context.Background()
	for i := range 100 {
		if err := p.Put(ctx, ev(i, 10)); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}
	wantOnce(t, ids(t, readAll(t, arn)), evIDs(0, 100))
	s := p.Stats()
	if s.Put != 100 || s.Failed != 0 || s.Retried != 300 || s.Requests != 4 || proxy.Faults.Load() != 3 {
		t.Fatalf("stats %+v, faults %d; want 100 put, 300 retried in 4 requests", s, proxy.Faults.Load())
	}
	if len(out.ok) != 100 || len(out.bad) != 0 {
		t.Fatalf("outcomes: %d stored, %d failed", len(out.ok), len(out.bad))
	}
}

// TestKinesisPartialFailure: the fault proxy in front of kinesalite fails
// chosen entries of PutRecords requests (FailedRecordCount, per-entry
// ErrorCode) and stores the others; the producer sends again only the
// failed entries, and gives up on those that keep failing.
func TestKinesisPartialFailure(t *testing.T) {
	arn, name := stream(t, 1)
	proxy := faultproxy.For(t, testkinesis.Endpoint(t))
	var mu sync.Mutex
	tries := map[string]int{} // id -> requests that carried it
	sizes := map[int64]int{}  // request -> entries
	proxy.SetEntryFault(func(e faultproxy.Entry) string {
		var ev struct{ ID string }
		json.Unmarshal(e.Data, &ev)
		var n int
		fmt.Sscanf(ev.ID, "e-%d", &n)
		mu.Lock()
		defer mu.Unlock()
		sizes[e.N]++
		tries[ev.ID]++
		// Every third event fails twice (an internal failure, then
		// throttled), every seventh fails for good.
		switch {
		case n%7 == 0:
			return faultproxy.EntryThrottled
		case n%3 == 0 && tries[ev.ID] == 1:
			return faultproxy.EntryInternalFailure
		case n%3 == 0 && tries[ev.ID] == 2:
			return faultproxy.EntryThrottled
		}
		return ""
	})
	out := newOutcomes()
	p := producer.NewKinesis(client(proxy.URL), name, producer.WithLinger(time.Hour), producer.WithRetries(4, time.Millisecond, 10*time.Millisecond), producer.WithOnResult(out.record))
	ctx := context.Background()
	for i := range 42 {
		if err := p.Put(ctx, ev(i, 10)); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}
	var stored, given []string
	for i := range 42 {
		if i%7 == 0 {
			given = append(given, fmt.Sprintf("e-%05d", i))
		} else {
			stored = append(stored, fmt.Sprintf("e-%05d", i))
		}
	}
	wantOnce(t, ids(t, readAll(t, arn)), stored)
	// Only the failed entries go again: 42, then the 6 sevens and 12 other
	// threes, again the same, then the sevens twice more.
	var got []int
	for n := int64(1); n <= int64(len(sizes)); n++ {
		got = append(got, sizes[n])
	}
	if !slices.Equal(got, []int{42, 18, 18, 6}) || proxy.Count("PutRecords") != 4 {
		t.Fatalf("requests of %v entries, want [42 18 18 6]", got)
	}
	if len(out.ok) != len(stored) || len(out.bad) != len(given) {
		t.Fatalf("outcomes: %d stored, %d failed; want %d, %d", len(out.ok), len(out.bad), len(stored), len(given))
	}
	for _, id := range given {
		if err := out.bad[id]; err == nil || !strings.Contains(err.Error(), "ProvisionedThroughputExceededException") {
			t.Fatalf("outcome of %s: %v", id, err)
		}
	}
	if s := p.Stats(); s.Put != 36 || s.Failed != 6 || s.Retried != 18+18+6 {
		t.Fatalf("stats %+v", s)
	}
	if f := proxy.EntriesFailed.Load(); f != 18+18+6+6 {
		t.Fatalf("proxy failed %d entries, want 48", f)
	}
}

// gate holds every PutRecords request until it is opened.
type gate struct {
	producer.KinesisAPI
	open chan struct{}
}

func (g *gate) PutRecords(ctx context.Context, in *kinesis.PutRecordsInput, o ...func(*kinesis.Options)) (*kinesis.PutRecordsOutput, error) {
	select {
	case <-g.open:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return g.KinesisAPI.PutRecords(ctx, in, o...)
}

// TestKinesisBackPressure: while Kinesis does not answer, Put blocks once
// the buffer and the batch under way are full, and gives up with its ctx.
func TestKinesisBackPressure(t *testing.T) {
	arn, name := stream(t, 1)
	c := client(testkinesis.Endpoint(t))
	g := &gate{KinesisAPI: c, open: make(chan struct{})}
	out := newOutcomes()
	p := producer.NewKinesis(g, name, producer.WithBuffer(10), producer.WithLinger(time.Millisecond), producer.WithOnResult(out.record))
	accepted := 0
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		err := p.Put(ctx, ev(accepted, 10))
		cancel()
		if errors.Is(err, context.DeadlineExceeded) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		accepted++
		if accepted > 10+producer.MaxBatchRecords {
			t.Fatalf("Put accepted %d events without an answer from Kinesis", accepted)
		}
	}
	// The batch in flight holds at least one, the buffer ten.
	if accepted < 11 {
		t.Fatalf("accepted %d before blocking, want at least 11", accepted)
	}
	close(g.open)
	if err := p.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	wantOnce(t, ids(t, readAll(t, arn)), evIDs(0, accepted))
	if len(out.ok) != accepted {
		t.Fatalf("%d outcomes, want %d", len(out.ok), accepted)
	}
}

// TestKinesisCloseFlushes: Close sends what lingers and returns once it is
// stored; Put and Flush then refuse.
func TestKinesisCloseFlushes(t *testing.T) {
	arn, name := stream(t, 1)
	c := client(testkinesis.Endpoint(t))
	p := producer.NewKinesis(c, name, producer.WithLinger(time.Hour))
	ctx := context.Background()
	for i := range 10 {
		if err := p.Put(ctx, ev(i, 10)); err != nil {
			t.Fatal(err)
		}
	}
	// Close sends what lingers now: one that waited out the hour's linger
	// would meet this context's end instead. No duration is measured.
	closeCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := p.Close(closeCtx); err != nil {
		t.Fatalf("Close: %v; it should not wait out the linger", err)
	}
	wantOnce(t, ids(t, readAll(t, arn)), evIDs(0, 10))
	if err := p.Put(ctx, ev(10, 10)); !errors.Is(err, producer.ErrClosed) {
		t.Fatalf("Put after Close: %v", err)
	}
	if err := p.Flush(ctx); !errors.Is(err, producer.ErrClosed) {
		t.Fatalf("Flush after Close: %v", err)
	}
	if err := p.Close(ctx); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

// TestKinesisContextCancellation: a Put waiting for room gives up with its
// context; a Close whose context ends while Kinesis throttles reports every
// event not stored as failed, and returns.
func TestKinesisContextCancellation(t *testing.T) {
	_, name := stream(t, 1)
	proxy := faultproxy.For(t, testkinesis.Endpoint(t))
	proxy.SetRule(func(r faultproxy.Request) (*faultproxy.Fault, faultproxy.Hold) {
		if r.Op == "PutRecords" {
			return faultproxy.Throttled, nil
		}
		return nil, nil
	})
	out := newOutcomes()
	p := producer.NewKinesis(client(proxy.URL), name, producer.WithBuffer(1), producer.WithLinger(0),
		producer.WithRetries(1000, 10*time.Millisecond, 50*time.Millisecond), producer.WithOnResult(out.record))
	accepted := 0
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		err := p.Put(ctx, ev(accepted, 10))
		cancel()
		if errors.Is(err, context.DeadlineExceeded) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		accepted++
	}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	if err := p.Put(cancelled, ev(999, 10)); !errors.Is(err, context.Canceled) {
		t.Fatalf("Put with a cancelled context: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if err := p.Close(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Close: %v, want DeadlineExceeded", err)
	}
	if len(out.bad) != accepted || len(out.ok) != 0 {
		t.Fatalf("outcomes: %d failed, %d stored; want %d failed", len(out.bad), len(out.ok), accepted)
	}
	for id, err := range out.bad {
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("outcome of %s: %v", id, err)
		}
	}
	if s := p.Stats(); s.Failed != int64(accepted) {
		t.Fatalf("stats %+v", s)
	}
}

// TestKinesisPutRacingClose: Puts from many goroutines race a Close; each
// accepted event is stored once and reported, each other one refused with
// ErrClosed.
func TestKinesisPutRacingClose(t *testing.T) {
	arn, name := stream(t, 2)
	c := client(testkinesis.Endpoint(t))
	out := newOutcomes()
	p := producer.NewKinesis(c, name, producer.WithBuffer(50), producer.WithLinger(time.Millisecond), producer.WithOnResult(out.record))
	var mu sync.Mutex
	var accepted []string
	var wg sync.WaitGroup
	var next atomic.Int64
	for range 8 {
		wg.Go(func() {
			for {
				i := int(next.Add(1))
				err := p.Put(context.Background(), ev(i, 10))
				if errors.Is(err, producer.ErrClosed) {
					return
				}
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				accepted = append(accepted, fmt.Sprintf("e-%05d", i))
				mu.Unlock()
			}
		})
	}
	time.Sleep(100 * time.Millisecond)
	if err := p.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if len(accepted) == 0 {
		t.Fatal("no Put got in before Close")
	}
	wantOnce(t, ids(t, readAll(t, arn)), accepted)
	if len(out.ok) != len(accepted) || len(out.bad) != 0 {
		t.Fatalf("outcomes: %d stored, %d failed; %d accepted", len(out.ok), len(out.bad), len(accepted))
	}
}

// TestKinesisAggregation: aggregated records put into kinesalite, read back
// with GetRecords and handed to the real ingest handler, store each event
// once, in far fewer records.
func TestKinesisAggregation(t *testing.T) {
	arn, name := stream(t, 2)
	c := client(testkinesis.Endpoint(t))
	// An hour's linger: the aggregates are cut by size and by Close, never
	// by a timer that a slow machine lets fire between two Puts.
	p := producer.NewKinesis(c, name, producer.WithAggregation(), producer.WithLinger(time.Hour))
	ctx := context.Background()
	now := time.Now().UTC()
	for i := range 1000 {
		e := ev(i, i%200)
		if i%2 == 0 {
			e["time"] = now.Add(-time.Duration(i) * time.Second).Format(time.RFC3339Nano)
		}
		if err := p.Put(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	// One event too large to share an aggregate goes on its own.
	if err := p.Put(ctx, ev(1000, 60000)); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}
	s := p.Stats()
	if s.Put != 1001 || s.Records > 20 {
		t.Fatalf("stats %+v: want 1001 events in at most 20 records", s)
	}
	recs := readAll(t, arn)
	wantOnce(t, ids(t, recs), evIDs(0, 1001))
	aggregates := 0
	for _, r := range recs {
		if kpl.IsAggregate(r.Kinesis.Data) {
			aggregates++
		}
	}
	if aggregates == 0 || aggregates != len(recs)-1 {
		t.Fatalf("%d aggregates among %d records", aggregates, len(recs))
	}
	table := testddb.Table(t)
	ddb := testddb.Client(t, testddb.Endpoint(t))
	h := ingest.New(ingest.DefaultConfig(table), ddb, ingest.Options{})
	resp, err := h.Kinesis(ctx, events.KinesisEvent{Records: recs})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.BatchItemFailures) != 0 {
		t.Fatalf("batch item failures: %v", resp.BatchItemFailures)
	}
	st := testddb.StoredIn(t, ddb, table)
	if len(st.Events) != 1001 || st.Quarantined != 0 {
		t.Fatalf("stored %d events, %d quarantined; want 1001, 0", len(st.Events), st.Quarantined)
	}
	for k, n := range st.Events {
		if n != 1 {
			t.Fatalf("%s stored %d times", k, n)
		}
	}
}
