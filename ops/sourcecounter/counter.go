package sourcecounter

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/shardline/shardline/internal/counts"
)

// Client is the part of the DynamoDB client the counter uses.
type Client interface {
	UpdateItem(context.Context, *dynamodb.UpdateItemInput, ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	GetItem(context.Context, *dynamodb.GetItemInput, ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
}

// Counter adds stream records to counter items. It is safe for concurrent
// use; the previous release made one per container.
type Counter struct {
	Client      Client
	Table       string
	Retention   time.Duration // a counter item lives a day longer than its hour's events
	Concurrency int           // counter items updated at once; default 16
	MaxTypes    int           // types an item counts by name; default counts.MaxTypesPerItem

	// marks remembers the watermark this container last wrote per (item,
	// shard), so that a batch delivered again skips, without a request,
	// the items it already counted: under sustained throttling a retry
	// that re-sent every item could fail on a different one each time.
	mu    sync.Mutex
	marks map[markKey]string
	// known remembers what this container learned of each item's kept
	// types, so that an item at its cap is not read again each batch.
	known map[itemKey]kept
}

type markKey struct{ source, slice, sid string }

// maxMarks bounds the remembered watermarks; past it, the memory starts
// again, and a retry falls back to the conditional path.
const maxMarks = 1 << 16

func (c *Counter) mark(k markKey) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	m, ok := c.marks[k]
	return m, ok
}

func (c *Counter) remember(k markKey, seq string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.marks == nil || len(c.marks) > maxMarks {
		c.marks = map[markKey]string{}
	}
	c.marks[k] = seq
}

// Stats sums up one Apply, for logs and metrics.
type Stats struct {
	Records   int     // stream records received
	Counted   int     // events added to a counter
	Skipped   int     // records that do not count (not an event insert)
	Seen      int     // events a counter had already counted (a redelivery)
	Items     int     // counter items touched
	Updates   int     // UpdateItem requests
	Conflicts int     // updates refused by their condition, then re-read
	WCU       float64 // write capacity the updates consumed

	// Overflowed is the events counted without their type, in the
	// overflow counters of an item that keeps counts.MaxTypesPerItem types
	// already, or after DynamoDB refused an update with types; by source
	// in OverflowBySource.
	Overflowed       int
	OverflowBySource map[string]int
	// Fallbacks is the updates DynamoDB refused for their content
	// (ValidationException), sent again without types.
	Fallbacks int
}

// Handle was the previous release's Lambda entry point; tests play that
// release with it. The mapping's tumbling window is there only to make
// Lambda send the shard id; no state is kept across invocations, so the
// answer's state is empty (Lambda fails an invocation whose answer has
// none).
func (c *Counter) Handle(ctx context.Context, ev events.DynamoDBTimeWindowEvent) (events.DynamoDBTimeWindowEventResponse, Stats, error) {
	resp := events.DynamoDBTimeWindowEventResponse{}
	resp.State = map[string]string{}
	if ev.ShardID == "" {
		return resp, Stats{Records: len(ev.Records)}, counts.ErrNoShard
	}
	st, err := c.Apply(ctx, ev.ShardID, ev.Records)
	return resp, st, err
}

// Apply counts the records of one batch of stream shard shardID. Records
// already counted (a batch delivered again, whole or in part) are skipped.
// On error nothing is lost: the batch is retried and what was applied is
// skipped then.
func (c *Counter) Apply(ctx context.Context, shardID string, recs []events.DynamoDBEventRecord) (Stats, error) {
	st := Stats{Records: len(recs)}
	parsed, skipped, err := parse(recs)
	st.Skipped = skipped
	if err != nil {
		return st, err
	}
	groups := group(parsed)
	st.Items = len(groups)
	results := make([]itemStats, len(groups))
	conc := c.Concurrency
	if conc <= 0 {
		conc = 16
	}
	sem := make(chan struct{}, conc)
	var wg sync.WaitGroup
	for i, g := range groups {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			results[i] = c.applyItem(ctx, shortID(shardID, shardIDBytes), g)
		}()
	}
	wg.Wait()
	for i, r := range results {
		if r.overflowed > 0 {
			if st.OverflowBySource == nil {
				st.OverflowBySource = map[string]int{}
			}
			st.OverflowBySource[groups[i].source] += r.overflowed
		}
		st.Overflowed += r.overflowed
		st.Fallbacks += r.fallbacks
		st.Counted += r.counted
		st.Seen += r.seen
		st.Updates += r.updates
		st.Conflicts += r.conflicts
		st.WCU += r.wcu
		if r.err != nil && err == nil {
			err = r.err
		}
	}
	return st, err
}

type itemStats struct {
	counted, seen, updates, conflicts int
	overflowed, fallbacks             int
	wcu                               float64
	err                               error
}

// maxAttempts bounds the conditional updates of one item in one batch; each
// lost one re-reads the item first, so two suffice unless another invocation
// of the same shard runs at once.
const maxAttempts = 8

// applyItem adds g's records to their counter item, chunk by chunk, each
// chunk an atomic update that also advances the shard's watermark. When an
// update's condition fails, the item is read and the records at or below
// its watermark, already counted, are dropped. An update DynamoDB refuses
// for its content (a ValidationException) is never sent again: its records
// go once more, without their types, to the overflow counters; if even
// that is refused, the item's error is returned, after every other item of
// the batch was counted.
func (c *Counter) applyItem(ctx context.Context, sid string, g itemGroup) itemStats {
	ik, mk := itemKey{g.source, g.slice}, markKey{g.source, g.slice, sid}
	u := &updater{c: c, sid: sid, g: g, ids: map[string]string{}, kept: c.knownTypes(ik), recs: g.recs}
	if m, ok := c.mark(mk); ok {
		u.recs = above(u.recs, m)
		u.st.seen = len(g.recs) - len(u.recs)
		u.seen = &m
	}
	defer func() {
		c.rememberTypes(ik, u.kept)
		if u.seen != nil {
			c.remember(mk, *u.seen)
		}
	}()
	for attempt := 0; len(u.recs) > 0; attempt++ {
		if attempt == maxAttempts {
			return u.fail(fmt.Errorf("%d conditional updates lost in a row", maxAttempts))
		}
		progressed, err := u.step(ctx)
		if err != nil {
			return u.fail(err)
		}
		if progressed {
			attempt = -1
		}
	}
	return u.st
}
