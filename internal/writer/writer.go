// Package writer stores items with BatchWriteItem: 25 items a request,
// several requests in flight, and a verdict for every item. Items on keys
// that DynamoDB throttled wait for their key's pace (internal/pace) instead
// of being re-sent blind; other transient failures are retried with capped
// exponential back-off and full jitter; both until the context's deadline.
package writer

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

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
	// Held says which of each item's keys' pace held it back at least
	// once (pace.Pacer.Hold): refused for that index without a request.
	Held     []pace.Blame
	Requests int     // BatchWriteItem calls made
	Retried  int     // items sent again after being unprocessed or throttled
	Sent     int     // items sent, first sends and retries
	Refused  int     // items sent and throttled: Sent - Refused were answered
	WCU      float64 // write capacity consumed, as DynamoDB reported it

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
	return w.WriteInOrderWatched(ctx, items, 0, nil)
}

// WriteInOrderWatched is WriteInOrder that shows watch what the write has
// done so far, between its retries, every so often of the pacer's clock:
// a batch paced for half a minute need not wait for its end to tell
// adaptive sharding what its keys take. watch must not keep the Result.
func (w *Writer) WriteInOrderWatched(ctx context.Context, items []item.Item, every time.Duration, watch func(Result)) Result {
	res, left := w.write(ctx, items, w.once)
	shown := w.Pacer.Time()
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
		if now := w.Pacer.Time(); watch != nil && now.Sub(shown) >= every {
			watch(res)
			shown = now
		}
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
		Throttled: make([]bool, len(items)), Blame: make([]pace.Blame, len(items)), Held: make([]pace.Blame, len(items))}
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
		r.Held[i] |= st.held[k]
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
		r.Status[i], r.Err[i], r.Throttled[i], r.Blame[i], r.Held[i] = r.Status[j], r.Err[j], r.Throttled[j], r.Blame[j], r.Held[j]
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

// keyOfItem is the partition keys an item writes to.
func keyOfItem(it item.Item) pace.Key {
	k := pace.Key{Table: it.PK}
	if g, ok := it.Attrs[schema.GSIPK].(*types.AttributeValueMemberS); ok {
		k.GSI = g.Value
	}
	return k
}
