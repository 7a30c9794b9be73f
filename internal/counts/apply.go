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

	"github.com/shardline/shardline/internal/ddberr"
	"github.com/shardline/shardline/internal/schema"
	"github.com/shardline/shardline/pkg/bucketing"
)

// Client is the part of the DynamoDB client the counter function uses.
type Client interface {
	UpdateItem(context.Context, *dynamodb.UpdateItemInput, ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	GetItem(context.Context, *dynamodb.GetItemInput, ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
}

// Counter adds stream records to counter items. It is safe for concurrent
// use; make one per container.
type Counter struct {
	Client      Client
	Table       string
	Retention   time.Duration // a counter item lives a day longer than its hour's events
	Concurrency int           // counter items updated at once; default 16
	MaxTypes    int           // types an item counts by name; default MaxTypesPerItem

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
	// overflow counters of an item that keeps MaxTypesPerItem types
	// already, or after DynamoDB refused an update with types; by source
	// in OverflowBySource.
	Overflowed       int
	OverflowBySource map[string]int
	// Fallbacks is the updates DynamoDB refused for their content
	// (ValidationException), sent again without types.
	Fallbacks int
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

// itemGroup is the records of one batch that go to one counter item, in
// sequence order.
type itemGroup struct {
	source, slice string
	recs          []record
}

func group(recs []record) []itemGroup {
	idx := map[[2]string]int{}
	var out []itemGroup
	for _, r := range recs {
		k := [2]string{r.source, bucketing.CounterSK(r.time)}
		i, ok := idx[k]
		if !ok {
			i = len(out)
			idx[k] = i
			out = append(out, itemGroup{source: k[0], slice: k[1]})
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

// step counts the next chunk of the records left, or learns what it must
// first: it reads the item when the cap is near or an update's condition
// failed, and drops a type-naming update DynamoDB refused for one without
// types. progressed: records were counted.
func (u *updater) step(ctx context.Context) (progressed bool, err error) {
	ch := u.plan(u.recs)
	if ch.read {
		return false, u.refresh(ctx)
	}
	wcu, err := u.update(ctx, u.recs[:ch.n], ch, u.seen)
	u.st.updates++
	u.st.wcu += wcu
	var cond *types.ConditionalCheckFailedException
	switch {
	case err == nil:
		u.applied(ch)
		return true, nil
	case errors.As(err, &cond):
		u.st.conflicts++
		return false, u.refresh(ctx)
	case ddberr.Classify(err) == ddberr.Invalid && !u.fallback:
		u.fallback = true
		u.st.fallbacks++
		return false, nil
	case ddberr.Classify(err) == ddberr.Invalid:
		return false, fmt.Errorf("DynamoDB refused even an update without types, so this item cannot be counted "+
			"(the batch fails, and the mapping sets it aside once its retries are spent): %w", err)
	}
	return false, err
}

// applied moves past chunk ch, counted.
func (u *updater) applied(ch chunk) {
	u.st.counted += ch.n
	u.st.overflowed += ch.overflow
	u.learned(ch)
	last := u.recs[ch.n-1].seq
	u.seen = &last
	u.recs = u.recs[ch.n:]
}

// refresh reads the item's watermark and kept types, and drops the records
// at or below the watermark: they were counted already.
func (u *updater) refresh(ctx context.Context) error {
	mark, err := u.read(ctx, u.recs)
	if err != nil {
		return err
	}
	if mark != nil {
		kept := above(u.recs, *mark)
		u.st.seen += len(u.recs) - len(kept)
		u.recs = kept
	}
	u.seen = mark
	return nil
}

func (u *updater) fail(err error) itemStats {
	u.st.err = fmt.Errorf("counter %s %s: %w", u.g.source, u.g.slice, err)
	return u.st
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

// updater writes one item's chunks.
type updater struct {
	c        *Counter
	sid      string
	g        itemGroup
	ids      map[string]string // type -> its id in this item, once a collision made it long
	kept     kept              // what is known of the types the item keeps
	fallback bool              // DynamoDB refused an update with types: count the rest without

	recs []record // the records left to count, in sequence order
	seen *string  // the watermark as last read or written; nil until known
	st   itemStats
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
		schema.SK: &types.AttributeValueMemberS{Value: u.g.slice},
	}
}

// update adds recs, chunk c (all above the watermark seen, or above
// whatever it is when seen is nil), in one conditional UpdateItem.
func (u *updater) update(ctx context.Context, recs []record, c chunk, seen *string) (float64, error) {
	e := newExpr()
	u.counters(e, recs, c)
	w := e.name(markPrefix + u.sid)
	e.set(w, e.num(recs[len(recs)-1].seq))
	if seen == nil {
		e.cond(fmt.Sprintf("(attribute_not_exists(%s) OR %s < %s)", w, w, e.num(recs[0].seq)))
	} else {
		e.cond(fmt.Sprintf("%s = %s", w, e.num(*seen)))
	}
	u.types(e, c)
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

// counters adds recs to their minute's counter: the one of their type when
// c counts it by name, the overflow one otherwise.
func (u *updater) counters(e *expr, recs []record, c chunk) {
	adds := map[string]int{}
	var order []string
	for _, r := range recs {
		name := overflowPrefix + r.time.Format("04")
		if id, ok := c.named[r.typ]; ok {
			name = countPrefix + r.time.Format("04") + id
		}
		if adds[name] == 0 {
			order = append(order, name)
		}
		adds[name]++
	}
	for _, name := range order {
		e.add(e.name(name), e.num(strconv.Itoa(adds[name])))
	}
}

// types names c's named types in the item, each on condition that its id
// names no other type, and adds their ids to the kept set, on condition
// that the set then holds at most the cap.
func (u *updater) types(e *expr, c chunk) {
	if len(c.order) == 0 {
		return
	}
	ids := make([]string, 0, len(c.order))
	for _, typ := range c.order {
		id := c.named[typ]
		ids = append(ids, id)
		t, v := e.name(typePrefix+id), e.str(typ)
		e.set(t, v)
		e.cond(fmt.Sprintf("(attribute_not_exists(%s) OR %s = %s)", t, t, v))
	}
	k := e.name(keptAttr)
	e.add(k, e.value(&types.AttributeValueMemberSS{Value: ids}))
	if c.fresh > 0 {
		e.cond(fmt.Sprintf("(attribute_not_exists(%s) OR size(%s) <= %s)", k, k, e.num(strconv.Itoa(u.c.maxTypes()-c.fresh))))
	}
}

func (u *updater) expiry() time.Time {
	h, _, _ := bucketing.CounterSliceTime(u.g.slice)
	return h.Add(time.Hour + u.c.Retention + 24*time.Hour)
}

// read fetches the shard's watermark, the kept set and the types of recs'
// ids, strongly consistent. A short id that names another type in this item (a
// collision) switches that type to its long id here.
func (u *updater) read(ctx context.Context, recs []record) (*string, error) {
	e := newExpr()
	proj := []string{e.name(markPrefix + u.sid), e.name(keptAttr)}
	typs := map[string]bool{}
	for _, r := range recs {
		if !typs[r.typ] && len(typs) < maxTypes { // the next chunk's, at most: the projection has a 4 KB budget too
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
		return nil, fmt.Errorf("read the watermark and kept types: %w", err)
	}
	for t := range typs {
		if v, ok := out.Item[typePrefix+u.typeID(t)].(*types.AttributeValueMemberS); ok && v.Value != t {
			u.ids[t] = shortID(t, 32)
		}
	}
	u.kept = kept{ids: map[string]bool{}, exact: true}
	if ks, ok := out.Item[keptAttr].(*types.AttributeValueMemberSS); ok {
		for _, id := range ks.Value {
			u.kept.ids[id] = true
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
