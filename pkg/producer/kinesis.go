package producer

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/shardline/shardline/internal/backoff"
)

// Kinesis limits of one PutRecords request.
const (
	MaxBatchRecords = 500     // records per PutRecords request
	MaxBatchBytes   = 5 << 20 // data and partition keys per PutRecords request
	MaxRecordBytes  = 1 << 20 // data and partition key of one record
)

// DefaultAggregateBytes is the largest aggregated record WithAggregation
// makes, the KPL's default.
const DefaultAggregateBytes = 51200

var (
	// ErrClosed is returned by Put and Flush after Close.
	ErrClosed = errors.New("producer: closed")
	// ErrTooLarge is returned by Put for an event that cannot fit one
	// Kinesis record.
	ErrTooLarge = errors.New("producer: event is larger than a Kinesis record")
	// ErrPartitionKey is returned by Put for an event whose partition key
	// (from WithPartitionKey) Kinesis would refuse.
	ErrPartitionKey = errors.New("producer: partition key is not one Kinesis takes")
)

// KinesisAPI is the part of the Kinesis client a Kinesis producer uses;
// *kinesis.Client has it.
type KinesisAPI interface {
	PutRecords(ctx context.Context, in *kinesis.PutRecordsInput, optFns ...func(*kinesis.Options)) (*kinesis.PutRecordsOutput, error)
}

// Outcome is what became of one event accepted by Kinesis.Put.
type Outcome struct {
	ID string // the event's id, as given or as Put made it
	// ShardID and SequenceNumber say where it was stored; the events of one
	// aggregated record share them.
	ShardID, SequenceNumber string
	Attempts                int   // PutRecords requests that carried it
	Err                     error // nil when Kinesis stored it
}

// Stats are a Kinesis producer's counts since it was made.
type Stats struct {
	Put      int64 // events Kinesis stored
	Retried  int64 // events sent again after a failure, once per retry
	Failed   int64 // events given up on, reported with an error
	Records  int64 // Kinesis records stored (an aggregate counts once)
	Requests int64 // PutRecords requests made
}

// Kinesis puts events into a Kinesis stream in PutRecords batches. It is
// safe for concurrent use. Make one with NewKinesis and Close it when done.
type Kinesis struct {
	client KinesisAPI
	stream string
	cfg    kinesisConfig

	mu     sync.RWMutex // held for reading while sending to in
	closed bool
	in     chan item
	done   chan struct{} // closed when run returns
	ctx    context.Context
	cancel context.CancelFunc

	put, retried, failed, records, requests atomic.Int64
}

// item is an event to put, or a flush marker.
type item struct {
	ev    event
	key   string
	flush chan struct{}
}

// NewKinesis returns a producer that puts events into stream (a name or an
// ARN) with client. Its SDK client's own retries apply to whole requests;
// the producer retries the records a request did not store.
func NewKinesis(client KinesisAPI, stream string, opts ...KinesisOption) *Kinesis {
	cfg := kinesisConfig{
		buffer:      10000,
		linger:      50 * time.Millisecond,
		maxAttempts: 10,
		backoff:     backoff.Policy{Base: 100 * time.Millisecond, Max: 5 * time.Second},
		key:         defaultKey,
	}
	for _, o := range opts {
		o(&cfg)
	}
	k := &Kinesis{client: client, stream: stream, cfg: cfg, in: make(chan item, cfg.buffer), done: make(chan struct{})}
	k.ctx, k.cancel = context.WithCancel(context.Background())
	go k.run()
	return k
}

// Put accepts an event for sending: a json.RawMessage, []byte or string of
// a CloudEvent's JSON, or a value that encodes to one. An event without an
// id gets a UUIDv7, one without a time gets the present time. Put blocks
// while the buffer is full, until there is room or ctx is done. It returns
// nil once the event is accepted; its outcome comes later (WithOnResult,
// Stats).
func (k *Kinesis) Put(ctx context.Context, ev any) error {
	e, err := prepare(ev, time.Now())
	if err != nil {
		return err
	}
	key := k.cfg.key(e.id)
	if err := checkKey(e.id, key); err != nil {
		return err
	}
	if n := len(e.data) + len(key); n > MaxRecordBytes {
		return fmt.Errorf("%w: %d bytes, over %d", ErrTooLarge, n, MaxRecordBytes)
	}
	return k.enqueue(ctx, item{ev: e, key: key})
}

func (k *Kinesis) enqueue(ctx context.Context, it item) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	k.mu.RLock()
	defer k.mu.RUnlock()
	if k.closed {
		return ErrClosed
	}
	select {
	case k.in <- it:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Flush sends every event accepted before it and waits until each has an
// outcome, or ctx is done.
func (k *Kinesis) Flush(ctx context.Context) error {
	done := make(chan struct{})
	if err := k.enqueue(ctx, item{flush: done}); err != nil {
		return err
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close stops accepting events, sends those accepted and waits until each
// has an outcome. If ctx is done first, the events not yet stored are
// reported failed with ctx's error, and Close returns it. Close waits for
// Puts blocked on a full buffer to get in or give up.
func (k *Kinesis) Close(ctx context.Context) error {
	k.mu.Lock()
	if !k.closed {
		k.closed = true
		close(k.in)
	}
	k.mu.Unlock()
	select {
	case <-k.done:
		return nil
	case <-ctx.Done():
		k.cancel()
		<-k.done
		return ctx.Err()
	}
}

// Stats returns the producer's counts.
func (k *Kinesis) Stats() Stats {
	return Stats{
		Put: k.put.Load(), Retried: k.retried.Load(), Failed: k.failed.Load(),
		Records: k.records.Load(), Requests: k.requests.Load(),
	}
}

// run gathers items into batches and sends them, one request at a time,
// until in is closed and drained.
func (k *Kinesis) run() {
	defer close(k.done)
	defer k.cancel()
	b := &batcher{k: k}
	for {
		it, ok := <-k.in
		if !ok {
			return
		}
		b.add(it)
		open := k.linger(b)
		b.flush()
		if !open {
			return
		}
	}
}

// linger adds items to b until the linger time has passed, a flush marker
// came, or in is closed (then it returns false).
func (k *Kinesis) linger(b *batcher) bool {
	if b.flushing() {
		return true
	}
	t := time.NewTimer(k.cfg.linger)
	defer t.Stop()
	for {
		select {
		case it, ok := <-k.in:
			if !ok {
				return false
			}
			b.add(it)
			if b.flushing() {
				return true
			}
		case <-t.C:
			return true
		}
	}
}

// record is one Kinesis record: one event, or an aggregate of several.
type record struct {
	data   []byte
	key    string
	events []event
}

func (r *record) size() int { return len(r.data) + len(r.key) }

// batcher builds PutRecords batches, sending each as it fills.
type batcher struct {
	k       *Kinesis
	recs    []*record
	bytes   int
	agg     *aggregator
	aggEvs  []event
	flushes []chan struct{}
}

func (b *batcher) flushing() bool { return len(b.flushes) > 0 }

func (b *batcher) add(it item) {
	if it.flush != nil {
		b.flushes = append(b.flushes, it.flush)
		return
	}
	if b.k.cfg.aggregate == 0 {
		b.addRecord(&record{data: it.ev.data, key: it.key, events: []event{it.ev}})
		return
	}
	if b.agg != nil && b.agg.sizeWith(it.ev.data)+len(b.agg.key) > b.k.cfg.aggregate {
		b.seal()
	}
	if b.agg == nil {
		b.agg = &aggregator{key: it.key}
	}
	b.agg.add(it.ev.data)
	b.aggEvs = append(b.aggEvs, it.ev)
}

// seal ends the aggregate under way: one event goes as a plain record.
func (b *batcher) seal() {
	if b.agg == nil {
		return
	}
	r := &record{data: b.agg.bytes(), key: b.agg.key, events: b.aggEvs}
	if len(b.aggEvs) == 1 {
		r.data = b.aggEvs[0].data
	}
	b.agg, b.aggEvs = nil, nil
	b.addRecord(r)
}

func (b *batcher) addRecord(r *record) {
	if len(b.recs) == MaxBatchRecords || b.bytes+r.size() > MaxBatchBytes {
		b.send()
	}
	b.recs = append(b.recs, r)
	b.bytes += r.size()
}

func (b *batcher) send() {
	if len(b.recs) > 0 {
		b.k.send(b.recs)
	}
	b.recs, b.bytes = nil, 0
}

// flush sends everything gathered and releases the Flush calls waiting.
func (b *batcher) flush() {
	b.seal()
	b.send()
	for _, f := range b.flushes {
		close(f)
	}
	b.flushes = nil
}

// send puts recs, retrying only the records that failed, until each is
// stored or given up on.
func (k *Kinesis) send(recs []*record) {
	for attempt := 1; ; attempt++ {
		if err := k.ctx.Err(); err != nil {
			k.fail(recs, attempt-1, fmt.Errorf("producer: gave up: %w", err))
			return
		}
		failed, err := k.attempt(recs, attempt)
		if len(failed) == 0 {
			return
		}
		if err != nil && !retryable(err) || attempt >= k.cfg.maxAttempts {
			k.fail(failed, attempt, err)
			return
		}
		for _, r := range failed {
			k.retried.Add(int64(len(r.events)))
		}
		if backoff.Sleep(k.ctx, k.cfg.backoff.Wait(attempt)) != nil {
			k.fail(failed, attempt, fmt.Errorf("producer: gave up: %w (after %v)", k.ctx.Err(), err))
			return
		}
		recs = failed
	}
}

// attempt makes one PutRecords request of recs, reports the records it
// stored and those that failed for good, and returns the ones to retry
// with the error that failed them.
func (k *Kinesis) attempt(recs []*record, attempt int) ([]*record, error) {
	in := &kinesis.PutRecordsInput{Records: make([]types.PutRecordsRequestEntry, len(recs))}
	if strings.HasPrefix(k.stream, "arn:") {
		in.StreamARN = aws.String(k.stream)
	} else {
		in.StreamName = aws.String(k.stream)
	}
	for i, r := range recs {
		in.Records[i] = types.PutRecordsRequestEntry{Data: r.data, PartitionKey: aws.String(r.key)}
	}
	k.requests.Add(1)
	out, err := k.client.PutRecords(k.ctx, in)
	if err != nil {
		if refused := refusedMember(err, len(recs)); len(refused) > 0 {
			return k.isolate(recs, refused, attempt)
		}
		return recs, fmt.Errorf("producer: PutRecords: %w", err)
	}
	if len(out.Records) != len(recs) {
		return recs, fmt.Errorf("producer: PutRecords answered %d entries for %d records", len(out.Records), len(recs))
	}
	var retry []*record
	var lastErr error
	for i, r := range recs {
		e := out.Records[i]
		code := aws.ToString(e.ErrorCode)
		switch {
		case code == "":
			k.succeed(r, e, attempt)
		case retryableCode(code):
			retry = append(retry, r)
			lastErr = fmt.Errorf("producer: PutRecords entry: %s: %s", code, aws.ToString(e.ErrorMessage))
		default:
			k.fail([]*record{r}, attempt, fmt.Errorf("producer: PutRecords entry: %s: %s", code, aws.ToString(e.ErrorMessage)))
		}
	}
	return retry, lastErr
}

// isolate fails the records Kinesis refused a request for, each with
// the reason, and sends the others again at once, in the same attempt:
// one bad record does not fail the records that shared its request.
func (k *Kinesis) isolate(recs []*record, refused map[int]string, attempt int) ([]*record, error) {
	var rest []*record
	for i, r := range recs {
		if why, bad := refused[i]; bad {
			k.fail([]*record{r}, attempt, fmt.Errorf("producer: %s", why))
			continue
		}
		rest = append(rest, r)
	}
	if len(rest) == 0 {
		return nil, nil
	}
	return k.attempt(rest, attempt)
}

func (k *Kinesis) succeed(r *record, e types.PutRecordsResultEntry, attempt int) {
	k.records.Add(1)
	k.put.Add(int64(len(r.events)))
	k.report(r, Outcome{ShardID: aws.ToString(e.ShardId), SequenceNumber: aws.ToString(e.SequenceNumber), Attempts: attempt})
}

func (k *Kinesis) fail(recs []*record, attempts int, err error) {
	for _, r := range recs {
		k.failed.Add(int64(len(r.events)))
		k.report(r, Outcome{Attempts: attempts, Err: err})
	}
}

func (k *Kinesis) report(r *record, o Outcome) {
	if k.cfg.onResult == nil {
		return
	}
	for _, e := range r.events {
		o.ID = e.id
		k.cfg.onResult(o)
	}
}
