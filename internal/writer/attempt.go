package writer

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/shardline/shardline/internal/backoff"
	"github.com/shardline/shardline/internal/ddberr"
	"github.com/shardline/shardline/internal/item"
	"github.com/shardline/shardline/internal/pace"
)

// batchResult is what became of the items of one job, by position.
type batchResult struct {
	status    []Status
	err       []error
	throttled []bool
	blame     []pace.Blame
	held      []pace.Blame // which key's pace held each back, at least once
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
		blame: make([]pace.Blame, n), held: make([]pace.Blame, n), tried: make([]bool, n)}
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
	send, held, wait := w.admit(items, idx, pending, r.held)
	if len(send) == 0 {
		r.left, r.why, r.next = held, errPaced, next{pace: wait}
		r.fail(held, errPaced)
		return
	}
	sentAt := w.Pacer.Time()
	out, err := w.Client.BatchWriteItem(ctx, w.request(items, idx, send, r), w.oneAttempt)
	r.requests++
	r.sent += len(send)
	refused := make([]bool, len(send))
	var left []int
	switch {
	case err == nil:
		left, err = w.accepted(out, items, idx, send, refused, r)
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

// request is the BatchWriteItem of the items at positions send of idx,
// each counted in r as tried (and retried, when it was tried before).
func (w *Writer) request(items []item.Item, idx, send []int, r *batchResult) *dynamodb.BatchWriteItemInput {
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
	return &dynamodb.BatchWriteItemInput{
		RequestItems:           map[string][]types.WriteRequest{w.Table: reqs},
		ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal,
	}
}

// accepted records in r what an answer DynamoDB accepted says: the items
// stored, and those it left unprocessed (refused, and returned in left),
// with an error saying how many.
func (w *Writer) accepted(out *dynamodb.BatchWriteItemOutput, items []item.Item, idx, send []int, refused []bool, r *batchResult) (left []int, err error) {
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
	return left, err
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
// those it holds back, marking in by which key's pace held each; wait is
// how long until the first held one could go, when none goes.
func (w *Writer) admit(items []item.Item, idx, pending []int, by []pace.Blame) (send, held []int, wait time.Duration) {
	if !w.Pacer.Paced() {
		return pending, nil, 0
	}
	keys := make([]pace.Key, len(pending))
	wcu := make([]float64, len(pending))
	for n, k := range pending {
		keys[n] = keyOfItem(items[idx[k]])
		wcu[n] = float64(item.WriteUnits(item.Bytes(items[idx[k]].Attrs)))
	}
	hold, wait := w.Pacer.Hold(keys, wcu)
	for n, k := range pending {
		if hold[n] == pace.None {
			send = append(send, k)
		} else {
			held = append(held, k)
			by[k] |= hold[n]
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
