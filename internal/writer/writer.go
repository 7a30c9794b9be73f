// Package writer stores items with BatchWriteItem: 25 items a request,
// several requests in flight, and a verdict for every item. Items on keys
// that DynamoDB throttled wait for their key's pace (internal/pace) instead
// of being re-sent blind; other transient failures are retried with capped
// exponential back-off and full jitter; both until the context's deadline.
package writer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/shardline/shardline/internal/backoff"
	"github.com/shardline/shardline/internal/ddberr"
	"github.com/shardline/shardline/internal/item"
	"github.com/shardline/shardline/internal/pace"
	"github.com/shardline/shardline/internal/schema"
)

// BatchSize is the most items BatchWriteItem takes in one request.
const BatchSize = 25

// Defaults of Writer's fields.
const (
	DefaultConcurrency = 32
	DefaultBaseDelay   = 25 * time.Millisecond
	DefaultMaxDelay    = 2 * time.Second
)

// API is the part of the DynamoDB client the writer uses.
type API interface {
	BatchWriteItem(context.Context, *dynamodb.BatchWriteItemInput, ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error)
}

// Writer writes items to one table. The zero values of its tuning fields
// mean their defaults.
type Writer struct {
	Client      API
	Table       string
	Concurrency int           // requests in flight at once
	BaseDelay   time.Duration // first back-off ceiling
	MaxDelay    time.Duration // largest back-off ceiling
	// Pacer paces the keys DynamoDB throttled; nil retries throttled
	// items with back-off alone.
	Pacer *pace.Pacer
	// Sleep waits d of the pacer's clock, or fails without waiting when
	// ctx would end first (backoff.SleepWithin, the default). A test whose
	// clock runs fast scales d to the wall clock here.
	Sleep func(ctx context.Context, d time.Duration) error
}

// Status is the verdict on one item.
type Status uint8

const (
	// Failed: not stored, for a reason that may pass (throttling, an
	// unavailable service, the deadline). Retrying is safe.
	Failed Status = iota
	// Stored: the item is in the table.
	Stored
	// Invalid: DynamoDB refused the item itself (a ValidationException on a
	// request holding only it); retrying will not help.
	Invalid
)

// String names the status.
func (s Status) String() string {
	switch s {
	case Stored:
		return "stored"
	case Invalid:
		return "invalid"
	}
	return "failed"
}

// Result reports a Write.
type Result struct {
	Status []Status // one per item given, in order
	Err    []error  // why an item is Failed or Invalid; nil when Stored
	// Throttled marks the items DynamoDB left unprocessed or refused in a
	// throttled request at least once, whatever became of them after: the
	// signal adaptive sharding watches. Blame says which of each item's
	// keys the throttling was laid on (pace.Pacer.Throttled); with no
	// pacer, both.
	Throttled []bool
	Blame     []pace.Blame
	Requests  int     // BatchWriteItem calls made
	Retried   int     // items sent again after being unprocessed or throttled
	Sent      int     // items sent, first sends and retries
	Refused   int     // items sent and throttled: Sent - Refused were answered
	WCU       float64 // write capacity consumed, as DynamoDB reported it

	owner []int // the index whose write stands for each item's key
}

// Count is how many items have status s.
func (r Result) Count(s Status) int {
	n := 0
	for _, x := range r.Status {
		if x == s {
			n++
		}
	}
	return n
}

// Write stores items and says what became of each. Items with the same key
// are written once (the last wins) and share a verdict: a request never
// carries two items with the same key, which DynamoDB would refuse. Write
// stops retrying when ctx is done or when the next wait would outlast its
// deadline, and reports what it did not finish as Failed.
//
// Each request retries its own unprocessed items: the right order when
// every item matters alike, as in an API request.
func (w *Writer) Write(ctx context.Context, items []item.Item) Result {
	res, _ := w.write(ctx, items, w.batch)
	res.share()
	return res
}

// WriteInOrder is Write for items whose order matters to the caller: a
// batch of a Kinesis shard, where a failed record makes Lambda deliver it
// and every record after it again. Every item is sent once as Write sends
// it (or waits, if its key is paced); what is left is then retried lowest
// index first, one request at a time, so that write capacity goes to the
// records that hold the shard back. Retrying the others together would
// spend a throttled key's capacity on records that will be delivered again
// anyway, and a backlog would then drain at a fraction of what its keys
// take.
func (w *Writer) WriteInOrder(ctx context.Context, items []item.Item) Result {
	res, left := w.write(ctx, items, w.once)
	// An item written for several (the last of its key) goes where the
	// first of them is: that is the record that waits for it.
	first := make([]int, len(items))
	for i := len(items) - 1; i >= 0; i-- {
		first[res.owner[i]] = i
	}
	slices.SortFunc(left, func(a, b int) int { return first[a] - first[b] })
	var fails int
	for len(left) > 0 {
		n := min(BatchSize, len(left))
		st := w.once(ctx, items, left[:n])
		res.add(left[:n], st)
		rest := make([]int, 0, len(st.left)+len(left)-n)
		for _, k := range st.left {
			rest = append(rest, left[k])
		}
		left = append(rest, left[n:]...)
		if len(st.left) == 0 {
			continue
		}
		if err := w.wait(ctx, st.next, &fails); err != nil {
			for _, i := range left {
				res.Status[i], res.Err[i] = Failed, fmt.Errorf("%w: %w", err, st.why)
			}
			break
		}
	}
	res.share()
	return res
}

// write sends every item once through send (batch: until done; once: one
// attempt), 25 to a request, several requests at a time. left holds the
// indexes of items send left to retry.
func (w *Writer) write(ctx context.Context, items []item.Item, send func(context.Context, []item.Item, []int) batchResult) (res Result, left []int) {
	res = Result{Status: make([]Status, len(items)), Err: make([]error, len(items)),
		Throttled: make([]bool, len(items)), Blame: make([]pace.Blame, len(items))}
	if len(items) == 0 {
		return res, nil
	}
	// Deduplicate: owner[i] is the index whose write stands for item i,
	// the last item with its key, as in a sequence of puts.
	last := make(map[[2]string]int, len(items))
	for i, it := range items {
		last[it.Key()] = i
	}
	res.owner = make([]int, len(items))
	unique := make([]int, 0, len(last))
	for i, it := range items {
		res.owner[i] = last[it.Key()]
		if res.owner[i] == i {
			unique = append(unique, i)
		}
	}
	jobs := make(chan []int)
	var mu sync.Mutex
	var wg sync.WaitGroup
	workers := w.Concurrency
	if workers <= 0 {
		workers = DefaultConcurrency
	}
	workers = min(workers, (len(unique)+BatchSize-1)/BatchSize)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for job := range jobs {
				st := send(ctx, items, job)
				mu.Lock()
				res.add(job, st)
				for _, k := range st.left {
					left = append(left, job[k])
				}
				mu.Unlock()
			}
		}()
	}
	for start := 0; start < len(unique); start += BatchSize {
		jobs <- unique[start:min(start+BatchSize, len(unique))]
	}
	close(jobs)
	wg.Wait()
	return res, left
}

// add takes in what a batch of the items at indexes job showed.
func (r *Result) add(job []int, st batchResult) {
	for k, i := range job {
		r.Status[i], r.Err[i] = st.status[k], st.err[k]
		r.Throttled[i] = r.Throttled[i] || st.throttled[k]
		r.Blame[i] |= st.blame[k]
	}
	r.Requests += st.requests
	r.Retried += st.retried
	r.Sent += st.sent
	r.Refused += st.refused
	r.WCU += st.wcu
}

// share gives every item the verdict of the item written for its key.
func (r *Result) share() {
	for i, j := range r.owner {
		r.Status[i], r.Err[i], r.Throttled[i], r.Blame[i] = r.Status[j], r.Err[j], r.Throttled[j], r.Blame[j]
	}
}

// batchResult is what became of the items of one job, by position.
type batchResult struct {
	status    []Status
	err       []error
	throttled []bool
	blame     []pace.Blame
	requests  int
	retried   int
	sent      int
	refused   int
	wcu       float64
	tried     []bool // positions sent at least once
	left      []int  // positions worth retrying, marked Failed for now
	why       error  // why they were not stored
	next      next   // how to wait before retrying them
}

func newBatchResult(n int) batchResult {
	return batchResult{status: make([]Status, n), err: make([]error, n), throttled: make([]bool, n),
		blame: make([]pace.Blame, n), tried: make([]bool, n)}
}

// next is how a retry must wait.
type next struct {
	pace     time.Duration // nothing was admitted: the first item's key takes one this much later
	backOff  bool          // a failure pacing does not cover: back off
	progress bool          // something was stored: a back-off starts over
}

// batch writes the items at indexes idx (at most BatchSize, distinct keys)
// until all are stored, one proves invalid, or time runs out.
func (w *Writer) batch(ctx context.Context, items []item.Item, idx []int) batchResult {
	r := newBatchResult(len(idx))
	pending := make([]int, len(idx))
	for k := range idx {
		pending[k] = k
	}
	var fails int
	for len(pending) > 0 {
		w.attempt(ctx, items, idx, pending, &r)
		if len(r.left) == 0 {
			break
		}
		pending = r.left
		if err := w.wait(ctx, r.next, &fails); err != nil {
			r.fail(pending, fmt.Errorf("%w after %d requests: %w", err, r.requests, r.why))
			r.left = nil
			break
		}
	}
	return r
}

// once makes one attempt at the items at indexes idx and reports in left
// what a retry could store.
func (w *Writer) once(ctx context.Context, items []item.Item, idx []int) batchResult {
	r := newBatchResult(len(idx))
	pending := make([]int, len(idx))
	for k := range idx {
		pending[k] = k
	}
	w.attempt(ctx, items, idx, pending, &r)
	return r
}

// attempt sends, in one request, the pending positions of idx that the
// pacer admits, and records their verdicts in r. What is worth retrying
// goes to r.left (marked Failed, with r.why), with how to wait in r.next.
func (w *Writer) attempt(ctx context.Context, items []item.Item, idx, pending []int, r *batchResult) {
	r.left, r.why, r.next = nil, nil, next{}
	send, held, wait := w.admit(items, idx, pending)
	if len(send) == 0 {
		r.left, r.why, r.next = held, errPaced, next{pace: wait}
		r.fail(held, errPaced)
		return
	}
	reqs := make([]types.WriteRequest, len(send))
	puts := make([]types.PutRequest, len(send))
	for n, k := range send {
		puts[n].Item = items[idx[k]].Attrs
		reqs[n].PutRequest = &puts[n]
		if r.tried[k] {
			r.retried++
		}
		r.tried[k] = true
	}
	sentAt := w.Pacer.Time()
	out, err := w.Client.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{
		RequestItems:           map[string][]types.WriteRequest{w.Table: reqs},
		ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal,
	}, w.oneAttempt)
	r.requests++
	r.sent += len(send)
	refused := make([]bool, len(send))
	var left []int
	switch {
	case err == nil:
		for _, c := range out.ConsumedCapacity {
			r.wcu += aws.ToFloat64(c.CapacityUnits)
		}
		unprocessed := map[[2]string]bool{}
		for _, u := range out.UnprocessedItems[w.Table] {
			if u.PutRequest != nil {
				unprocessed[keyOf(u.PutRequest.Item)] = true
			}
		}
		for n, k := range send {
			if unprocessed[items[idx[k]].Key()] {
				refused[n] = true
				left = append(left, k)
				continue
			}
			r.status[k], r.err[k] = Stored, nil
			r.next.progress = true
		}
		if len(left) > 0 {
			err = fmt.Errorf("%d of %d items unprocessed", len(left), len(send))
		}
	case ddberr.Classify(err) == ddberr.Invalid:
		w.isolate(ctx, items, idx, send, err, r)
	case !ddberr.Retryable(err):
		// Retrying within this invocation cannot help (the table is
		// missing, access is refused, the context ended). The items are
		// still reported Failed, so the caller's retry can succeed once
		// that is fixed.
		r.fail(send, fmt.Errorf("write to table %s: %w", w.Table, err))
	default:
		left = send
		if ddberr.Classify(err) == ddberr.Throttled && ddberr.KeyHeat(err) {
			for n := range refused {
				refused[n] = true
			}
		} else {
			// A server fault, or throttling laid on the table or the
			// account (RequestLimitExceeded, a table's on-demand
			// maximum): no key's pace relieves it.
			r.next.backOff = true
		}
	}
	w.throttled(items, idx, send, refused, sentAt, r)
	left = append(left, held...)
	if len(left) > 0 {
		if err == nil {
			err = errPaced
		}
		r.left, r.why = left, err
		r.fail(left, err)
	}
}

// oneAttempt serialises the request with the writer's own encoder
// (encode.go), and turns off the SDK's own retries of a request when the writer
// paces: a whole batch refused as throttled would otherwise be re-sent
// blind, under the pacer, before the pacer heard of it.
func (w *Writer) oneAttempt(o *dynamodb.Options) {
	withBatchWriteEncoder(o)
	if w.Pacer != nil {
		o.RetryMaxAttempts = 1
	}
}

// admit splits the pending positions into those the pacer lets go now and
// those it holds back; wait is how long until the first held one could go,
// when none goes.
func (w *Writer) admit(items []item.Item, idx, pending []int) (send, held []int, wait time.Duration) {
	if !w.Pacer.Paced() {
		return pending, nil, 0
	}
	keys := make([]pace.Key, len(pending))
	wcu := make([]float64, len(pending))
	for n, k := range pending {
		keys[n] = keyOfItem(items[idx[k]])
		wcu[n] = float64(item.WriteUnits(item.Bytes(items[idx[k]].Attrs)))
	}
	ok, wait := w.Pacer.Admit(keys, wcu)
	for n, k := range pending {
		if ok[n] {
			send = append(send, k)
		} else {
			held = append(held, k)
		}
	}
	return send, held, wait
}

// throttled records which items of a request sent at sentAt were refused,
// tells the pacer, and asks for a back-off when there is no pacer.
func (w *Writer) throttled(items []item.Item, idx, send []int, refused []bool, sentAt time.Time, r *batchResult) {
	var any bool
	for n, k := range send {
		if refused[n] {
			r.throttled[k] = true
			r.refused++
			any = true
		}
	}
	if !any {
		return
	}
	if w.Pacer == nil {
		for n, k := range send {
			if refused[n] {
				r.blame[k] |= pace.Table | pace.GSI
			}
		}
		r.next.backOff = true
		return
	}
	keys := make([]pace.Key, len(send))
	for n, k := range send {
		keys[n] = keyOfItem(items[idx[k]])
	}
	for n, b := range w.Pacer.Throttled(sentAt, keys, refused) {
		r.blame[send[n]] |= b
	}
}

// isolate writes the items of a request DynamoDB refused as invalid one by
// one: one bad item fails the whole request, and the rest must be stored.
func (w *Writer) isolate(ctx context.Context, items []item.Item, idx, send []int, err error, r *batchResult) {
	if len(send) == 1 {
		r.status[send[0]], r.err[send[0]] = Invalid, fmt.Errorf("write item: %w", err)
		return
	}
	for _, k := range send {
		one := w.batch(ctx, items, []int{idx[k]})
		r.status[k], r.err[k] = one.status[0], one.err[0]
		r.throttled[k] = r.throttled[k] || one.throttled[0]
		r.blame[k] |= one.blame[0]
		r.requests += one.requests
		r.retried += one.retried
		r.sent += one.sent
		r.refused += one.refused
		r.wcu += one.wcu
	}
}

// wait waits before a retry as n asks: until the pacer lets an item go, or
// a back-off (fails counts the back-offs since the last progress). It
// returns an error instead when ctx ends first or its deadline would pass
// while waiting.
func (w *Writer) wait(ctx context.Context, n next, fails *int) error {
	if n.progress {
		*fails = 0
	}
	d := n.pace
	if n.backOff || w.Pacer == nil && d == 0 {
		*fails++
		d = max(d, backoff.Policy{Base: w.base(), Max: w.max()}.Wait(*fails)+time.Millisecond)
	}
	if d == 0 {
		return ctx.Err()
	}
	sleep := w.Sleep
	if sleep == nil {
		sleep = backoff.SleepWithin
	}
	return sleep(ctx, d)
}

// errPaced is why an item waits: its key is paced.
var errPaced = errors.New("key paced after throttling")

func (r *batchResult) fail(ks []int, err error) {
	for _, k := range ks {
		r.status[k], r.err[k] = Failed, err
	}
}

func (w *Writer) base() time.Duration {
	if w.BaseDelay > 0 {
		return w.BaseDelay
	}
	return DefaultBaseDelay
}

func (w *Writer) max() time.Duration {
	if w.MaxDelay > 0 {
		return w.MaxDelay
	}
	return DefaultMaxDelay
}

func keyOf(attrs map[string]types.AttributeValue) [2]string {
	pk, _ := attrs[schema.PK].(*types.AttributeValueMemberS)
	sk, _ := attrs[schema.SK].(*types.AttributeValueMemberS)
	if pk == nil || sk == nil {
		return [2]string{}
	}
	return [2]string{pk.Value, sk.Value}
}

// KeysOf is the partition keys an item writes to, as the pacer knows
// them.
func KeysOf(it item.Item) pace.Key { return keyOfItem(it) }

// keyOfItem is the partition keys an item writes to.
func keyOfItem(it item.Item) pace.Key {
	k := pace.Key{Table: it.PK}
	if g, ok := it.Attrs[schema.GSIPK].(*types.AttributeValueMemberS); ok {
		k.GSI = g.Value
	}
	return k
}
