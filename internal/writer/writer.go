// Package writer stores items with BatchWriteItem: 25 items a request,
// several requests in flight, unprocessed items and throttled requests
// retried with capped exponential back-off and full jitter until the
// context's deadline, and a verdict for every item.
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
	// signal adaptive sharding watches.
	Throttled []bool
	Requests  int     // BatchWriteItem calls made
	Retried   int     // items sent again after being unprocessed or throttled
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
// stops retrying when ctx is done or when the next back-off would outlast
// its deadline, and reports what it did not finish as Failed.
//
// Each request retries its own unprocessed items, all at once: the right
// order when every item matters alike, as in an API request.
func (w *Writer) Write(ctx context.Context, items []item.Item) Result {
	res, _ := w.write(ctx, items, true)
	return res
}

// WriteInOrder is Write for items whose order matters to the caller: a
// batch of a Kinesis shard, where a failed record makes Lambda deliver it
// and every record after it again. Every item is sent once as Write sends
// it; what is left unprocessed is then retried lowest index first, one
// request at a time, so that write capacity goes to the records that hold
// the shard back. Retrying the others together would spend a throttled
// key's capacity on records that will be delivered again anyway, and a
// backlog would then drain at a fraction of what its keys take.
func (w *Writer) WriteInOrder(ctx context.Context, items []item.Item) Result {
	res, left := w.write(ctx, items, false)
	// An item written for several (the last of its key) goes where the
	// first of them is: that is the record that waits for it.
	first := make([]int, len(items))
	for i := len(items) - 1; i >= 0; i-- {
		first[res.owner[i]] = i
	}
	slices.SortFunc(left, func(a, b int) int { return first[a] - first[b] })
	for attempt := 0; len(left) > 0; {
		n := min(BatchSize, len(left))
		st := w.batch(ctx, items, left[:n], false)
		res.Requests += st.requests
		res.WCU += st.wcu
		var rest []int
		for k, i := range left[:n] {
			res.Status[i], res.Err[i] = st.status[k], st.err[k]
			res.Throttled[i] = res.Throttled[i] || st.throttled[k]
		}
		for _, k := range st.left {
			rest = append(rest, left[k])
		}
		res.Retried += n
		if len(rest) < n {
			attempt = 0 // progress: back off from the start again
		} else {
			attempt++
		}
		left = append(rest, left[n:]...)
		if len(rest) == 0 {
			continue
		}
		if err := w.backOff(ctx, attempt); err != nil {
			for _, i := range left {
				res.Status[i], res.Err[i] = Failed, fmt.Errorf("%w: %w", err, st.leftErr)
			}
			break
		}
	}
	res.share()
	return res
}

// write sends every item. With retry, each request retries its unprocessed
// items until it is done; without, it makes one attempt and left holds the
// indexes of items worth retrying, marked Failed for now.
func (w *Writer) write(ctx context.Context, items []item.Item, retry bool) (res Result, left []int) {
	res = Result{Status: make([]Status, len(items)), Err: make([]error, len(items)), Throttled: make([]bool, len(items))}
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
				st := w.batch(ctx, items, job, retry)
				mu.Lock()
				for k, i := range job {
					res.Status[i], res.Err[i], res.Throttled[i] = st.status[k], st.err[k], st.throttled[k]
				}
				for _, k := range st.left {
					left = append(left, job[k])
				}
				res.Requests += st.requests
				res.Retried += st.retried
				res.WCU += st.wcu
				mu.Unlock()
			}
		}()
	}
	for start := 0; start < len(unique); start += BatchSize {
		jobs <- unique[start:min(start+BatchSize, len(unique))]
	}
	close(jobs)
	wg.Wait()
	if retry {
		res.share()
	}
	return res, left
}

// share gives every item the verdict of the item written for its key.
func (r *Result) share() {
	for i, j := range r.owner {
		r.Status[i], r.Err[i], r.Throttled[i] = r.Status[j], r.Err[j], r.Throttled[j]
	}
}

type batchResult struct {
	status    []Status
	err       []error
	throttled []bool
	requests  int
	retried   int
	wcu       float64
	left      []int // without retry: the positions worth retrying
	leftErr   error // and why they were not stored
}

// batch writes the items at indexes idx (at most BatchSize, distinct keys)
// until all are stored, one proves invalid, or time runs out. Without
// retry it makes one attempt and reports in left what a retry could store.
func (w *Writer) batch(ctx context.Context, items []item.Item, idx []int, retry bool) batchResult {
	r := batchResult{status: make([]Status, len(idx)), err: make([]error, len(idx)), throttled: make([]bool, len(idx))}
	pos := make(map[[2]string]int, len(idx)) // key -> position in idx
	pending := make([]int, len(idx))         // positions not yet stored
	for k, i := range idx {
		pos[items[i].Key()] = k
		pending[k] = k
	}
	for attempt := 0; ; attempt++ {
		reqs := make([]types.WriteRequest, len(pending))
		puts := make([]types.PutRequest, len(pending))
		for n, k := range pending {
			puts[n].Item = items[idx[k]].Attrs
			reqs[n].PutRequest = &puts[n]
		}
		out, err := w.Client.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{
			RequestItems:           map[string][]types.WriteRequest{w.Table: reqs},
			ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal,
		})
		r.requests++
		var left []int
		switch {
		case err == nil:
			for _, c := range out.ConsumedCapacity {
				r.wcu += aws.ToFloat64(c.CapacityUnits)
			}
			unprocessed := map[int]bool{}
			for _, u := range out.UnprocessedItems[w.Table] {
				if u.PutRequest == nil {
					continue
				}
				if k, ok := pos[keyOf(u.PutRequest.Item)]; ok {
					unprocessed[k] = true
				}
			}
			for _, k := range pending {
				if unprocessed[k] {
					left = append(left, k)
					r.throttled[k] = true
				} else {
					r.status[k], r.err[k] = Stored, nil
				}
			}
			if len(left) == 0 {
				return r
			}
			err = fmt.Errorf("%d of %d items unprocessed", len(left), len(pending))
		case ddberr.Classify(err) == ddberr.Invalid:
			// One bad item fails the whole request: write them one by one
			// to find it, and store the rest.
			if len(pending) == 1 {
				r.status[pending[0]], r.err[pending[0]] = Invalid, fmt.Errorf("write item: %w", err)
				return r
			}
			for _, k := range pending {
				one := w.batch(ctx, items, []int{idx[k]}, true)
				r.status[k], r.err[k] = one.status[0], one.err[0]
				r.throttled[k] = r.throttled[k] || one.throttled[0]
				r.requests += one.requests
				r.retried += one.retried
				r.wcu += one.wcu
			}
			return r
		case !ddberr.Retryable(err):
			// Retrying within this invocation cannot help (the table is
			// missing, access is refused, the context ended). The items
			// are still reported Failed, so the caller's retry can succeed
			// once that is fixed.
			for _, k := range pending {
				r.status[k], r.err[k] = Failed, fmt.Errorf("write to table %s: %w", w.Table, err)
			}
			return r
		default:
			left = pending
			if ddberr.Classify(err) == ddberr.Throttled {
				for _, k := range pending {
					r.throttled[k] = true
				}
			}
		}
		if !retry {
			r.left, r.leftErr = left, err
			return r.fail(left, err)
		}
		if berr := w.backOff(ctx, attempt); berr != nil {
			return r.fail(left, fmt.Errorf("%w after %d attempts: %w", berr, attempt+1, err))
		}
		r.retried += len(left)
		pending = left
	}
}

// backOff waits before retry attempt+1 (see backoff.Policy). It returns an
// error instead when ctx ends first or its deadline would pass while
// waiting.
func (w *Writer) backOff(ctx context.Context, attempt int) error {
	d := backoff.Policy{Base: w.base(), Max: w.max()}.Wait(attempt+1) + time.Millisecond
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < d {
		return errDeadline
	}
	return backoff.Sleep(ctx, d)
}

// errDeadline: the next back-off would outlast the context's deadline.
var errDeadline = errors.New("deadline reached")

func (r batchResult) fail(ks []int, err error) batchResult {
	for _, k := range ks {
		r.status[k], r.err[k] = Failed, err
	}
	return r
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
