package counts

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/shardline/shardline/internal/schema"
	"github.com/shardline/shardline/pkg/bucketing"
)

// API is the part of the DynamoDB client the counter uses.
type API interface {
	UpdateItem(context.Context, *dynamodb.UpdateItemInput, ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	GetItem(context.Context, *dynamodb.GetItemInput, ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
}

// Counter adds stream records to counter items. It is safe for concurrent
// use; make one per container.
type Counter struct {
	Client      API
	Table       string
	Retention   time.Duration // a counter item lives a day longer than its hour's events
	Concurrency int           // counter items updated at once; default 16

	// marks remembers the watermark this container last wrote per (item,
	// shard), so that a batch delivered again skips, without a request,
	// the items it already counted: under sustained throttling a retry
	// that re-sent every item could fail on a different one each time.
	mu    sync.Mutex
	marks map[markKey]string
}

type markKey struct{ source, hour, sid string }

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
}

// ErrNoShard is returned for an invocation without a shard id.
var ErrNoShard = errors.New("counts: the invocation carries no shardId: give the event source mapping a tumbling window (TumblingWindowInSeconds), which makes Lambda send it")

// Handle is the Lambda entry point. The mapping's tumbling window is there
// only to make Lambda send the shard id; no state is kept across
// invocations, so the answer's state is empty (Lambda fails an invocation
// whose answer has none).
func (c *Counter) Handle(ctx context.Context, ev events.DynamoDBTimeWindowEvent) (events.DynamoDBTimeWindowEventResponse, Stats, error) {
	resp := events.DynamoDBTimeWindowEventResponse{}
	resp.State = map[string]string{}
	if ev.ShardID == "" {
		return resp, Stats{Records: len(ev.Records)}, ErrNoShard
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
	for _, r := range results {
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

// itemGroup is the records of one batch that go to one counter item, in
// sequence order.
type itemGroup struct {
	source, hour string
	recs         []record
}

func group(recs []record) []itemGroup {
	idx := map[[2]string]int{}
	var out []itemGroup
	for _, r := range recs {
		k := [2]string{r.source, bucketing.Hour(r.time)}
		i, ok := idx[k]
		if !ok {
			i = len(out)
			idx[k] = i
			out = append(out, itemGroup{source: k[0], hour: k[1]})
		}
		out[i].recs = append(out[i].recs, r)
	}
	for _, g := range out {
		sort.SliceStable(g.recs, func(i, j int) bool { return seqLess(g.recs[i].seq, g.recs[j].seq) })
	}
	return out
}

type itemStats struct {
	counted, seen, updates, conflicts int
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
// its watermark, already counted, are dropped.
func (c *Counter) applyItem(ctx context.Context, sid string, g itemGroup) itemStats {
	var st itemStats
	u := updater{c: c, sid: sid, g: g, ids: map[string]string{}}
	recs := g.recs
	var seen *string // the watermark as last read or written; nil until known
	k := markKey{g.source, g.hour, sid}
	if m, ok := c.mark(k); ok {
		recs = above(recs, m)
		st.seen = len(g.recs) - len(recs)
		seen = &m
	}
	defer func() {
		if seen != nil {
			c.remember(k, *seen)
		}
	}()
	for attempt := 0; len(recs) > 0; attempt++ {
		if attempt == maxAttempts {
			st.err = fmt.Errorf("counter %s %s: %d conditional updates lost in a row", g.source, g.hour, maxAttempts)
			return st
		}
		n := chunkLen(recs)
		wcu, err := u.update(ctx, recs[:n], seen)
		st.updates++
		st.wcu += wcu
		var cond *types.ConditionalCheckFailedException
		switch {
		case err == nil:
			st.counted += n
			last := recs[n-1].seq
			seen = &last
			recs = recs[n:]
			attempt = -1
			continue
		case !errors.As(err, &cond):
			st.err = fmt.Errorf("counter %s %s: %w", g.source, g.hour, err)
			return st
		}
		st.conflicts++
		mark, err := u.read(ctx, recs)
		if err != nil {
			st.err = fmt.Errorf("counter %s %s: %w", g.source, g.hour, err)
			return st
		}
		seen = mark
		kept := recs
		if mark != nil {
			kept = above(recs, *mark)
		}
		st.seen += len(recs) - len(kept)
		recs = kept
	}
	return st
}

// above is the records after watermark mark.
func above(recs []record, mark string) []record {
	var out []record
	for _, r := range recs {
		if seqLess(mark, r.seq) {
			out = append(out, r)
		}
	}
	return out
}

// Expression budget of one update: DynamoDB allows 4 KB of update
// expression; each counter term is about a dozen characters.
const (
	maxCounters = 200
	maxTypes    = 40
)

// chunkLen is how many of recs, from the first, one update can carry.
func chunkLen(recs []record) int {
	counters := map[string]bool{}
	typs := map[string]bool{}
	for i, r := range recs {
		k := r.time.Format("04") + r.typ
		if !counters[k] && len(counters) == maxCounters || !typs[r.typ] && len(typs) == maxTypes {
			return i
		}
		counters[k], typs[r.typ] = true, true
	}
	return len(recs)
}

// updater writes one item's chunks.
type updater struct {
	c   *Counter
	sid string
	g   itemGroup
	ids map[string]string // type -> its id in this item, once a collision made it long
}

func (u *updater) typeID(t string) string {
	if id, ok := u.ids[t]; ok {
		return id
	}
	return shortID(t, typeIDBytes)
}

func (u *updater) key() map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		schema.PK: &types.AttributeValueMemberS{Value: bucketing.CounterPK(u.g.source)},
		schema.SK: &types.AttributeValueMemberS{Value: u.g.hour},
	}
}

// update adds recs (all above the watermark seen, or above whatever it is
// when seen is nil) in one conditional UpdateItem.
func (u *updater) update(ctx context.Context, recs []record, seen *string) (float64, error) {
	e := newExpr()
	adds := map[string]int{}
	var order []string
	for _, r := range recs {
		name := countPrefix + r.time.Format("04") + u.typeID(r.typ)
		if adds[name] == 0 {
			order = append(order, name)
		}
		adds[name]++
	}
	for _, name := range order {
		e.add(e.name(name), e.num(strconv.Itoa(adds[name])))
	}
	w := e.name(markPrefix + u.sid)
	e.set(w, e.num(recs[len(recs)-1].seq))
	if seen == nil {
		e.cond(fmt.Sprintf("(attribute_not_exists(%s) OR %s < %s)", w, w, e.num(recs[0].seq)))
	} else {
		e.cond(fmt.Sprintf("%s = %s", w, e.num(*seen)))
	}
	done := map[string]bool{}
	for _, r := range recs {
		if done[r.typ] {
			continue
		}
		done[r.typ] = true
		t, v := e.name(typePrefix+u.typeID(r.typ)), e.str(r.typ)
		e.set(t, v)
		e.cond(fmt.Sprintf("(attribute_not_exists(%s) OR %s = %s)", t, t, v))
	}
	e.set(e.name(schema.TTL), e.num(strconv.FormatInt(u.expiry().Unix(), 10)))
	out, err := u.c.Client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(u.c.Table),
		Key:                       u.key(),
		UpdateExpression:          aws.String(e.update()),
		ConditionExpression:       aws.String(e.condition()),
		ExpressionAttributeNames:  e.names,
		ExpressionAttributeValues: e.values,
		ReturnConsumedCapacity:    types.ReturnConsumedCapacityTotal,
	})
	if err != nil {
		return 0, err
	}
	if out.ConsumedCapacity != nil {
		return aws.ToFloat64(out.ConsumedCapacity.CapacityUnits), nil
	}
	return 0, nil
}

func (u *updater) expiry() time.Time {
	h, _ := time.Parse(bucketing.HourLayout, u.g.hour)
	return h.Add(time.Hour + u.c.Retention + 24*time.Hour)
}

// read fetches the shard's watermark and the types of recs' ids, strongly
// consistent. A short id that names another type in this item (a
// collision) switches that type to its long id here.
func (u *updater) read(ctx context.Context, recs []record) (*string, error) {
	e := newExpr()
	proj := []string{e.name(markPrefix + u.sid)}
	typs := map[string]bool{}
	for _, r := range recs {
		if !typs[r.typ] {
			typs[r.typ] = true
			proj = append(proj, e.name(typePrefix+u.typeID(r.typ)))
		}
	}
	out, err := u.c.Client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:                aws.String(u.c.Table),
		Key:                      u.key(),
		ConsistentRead:           aws.Bool(true),
		ProjectionExpression:     aws.String(joinComma(proj)),
		ExpressionAttributeNames: e.names,
	})
	if err != nil {
		return nil, fmt.Errorf("read after a lost update: %w", err)
	}
	for t := range typs {
		if v, ok := out.Item[typePrefix+u.typeID(t)].(*types.AttributeValueMemberS); ok && v.Value != t {
			u.ids[t] = shortID(t, 32)
		}
	}
	n, ok := out.Item[markPrefix+u.sid].(*types.AttributeValueMemberN)
	if !ok {
		return nil, nil
	}
	s, err := canonicalSeq(n.Value)
	if err != nil {
		return nil, fmt.Errorf("watermark: %w", err)
	}
	return &s, nil
}
