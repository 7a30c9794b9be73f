package counts

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/shardline/shardline/pkg/bucketing"
)

// A roll-up in bounded steps (docs/counts.md, "L2 at any number of
// sources"). Each hour a bucket's pass rolls the runs after its cursor,
// up to the fold's done run when the pass began, into L2 items taken in
// (source, hour) order, a chunk at a time; after each chunk its cursor
// item records the pass (its hour, its last run, the last item written).
// A Rollup that runs out of its budget, or is stopped by a timeout, leaves
// the pass there; the next goes on after the last item recorded, with the
// same runs. Items written after the last record are read again and, their
// watermark holding the runs, not written: nothing counts twice.

// DefaultRollupItems is how many L2 items one Rollup takes at most: at 16
// requests at once about 12 s of the scheduled fold's 90, after its folds.
const DefaultRollupItems = 20000

const (
	rollChunk   = 256              // items between two records of a pass
	rollReserve = 15 * time.Second // a Rollup takes nothing when its context ends within it
	passHour    = "pass"           // the cutoff (Unix s) of the bucket's pass in progress
	passTo      = "to"             // the done run the pass rolls to
	passSource  = "as"             // the pass's items up to (passSource, passSlice) are written
	passSlice   = "ah"
	passedHour  = "passed" // the cutoff of the bucket's last pass done
)

func (l *LSM) rollupItems() int {
	if l.RollupItems > 0 {
		return l.RollupItems
	}
	return DefaultRollupItems
}

// budget is the items a Rollup may still take, shared by its buckets.
type budget struct {
	ctx  context.Context
	left atomic.Int64
}

func newBudget(ctx context.Context, n int) *budget {
	b := &budget{ctx: ctx}
	b.left.Store(int64(n))
	return b
}

// take reserves up to n items, and answers how many: 0 once the budget is
// spent or the context's deadline is within rollReserve.
func (b *budget) take(n int) int {
	if dl, ok := b.ctx.Deadline(); ok && time.Until(dl) < rollReserve {
		return 0
	}
	for {
		left := b.left.Load()
		if left <= 0 {
			return 0
		}
		k := min(left, int64(n))
		if b.left.CompareAndSwap(left, left-k) {
			return int(k)
		}
	}
}

// rollCursor is where a bucket's roll-up stands.
type rollCursor struct {
	rolled int64   // every tuple of the runs up to it is in L2
	passed int64   // the cutoff of the last pass done
	pass   int64   // the cutoff of the pass in progress
	to     int64   // the run that pass rolls to
	after  itemKey // that pass's items up to it are written
}

// rollBucket goes on with bucket b's pass of the hours before cutoff: from
// where it was recorded, or from the start, rolling the runs after its
// cursor up to done. When every item of the pass is written, the cursor
// moves to the last run all of whose tuples are in L2.
func (l *LSM) rollBucket(ctx context.Context, b int, done int64, cutoff time.Time, bud *budget) (RollupStats, error) {
	var st RollupStats
	cur, err := l.readCursor(ctx, b)
	c := cutoff.Unix()
	if err != nil || cur.passed >= c {
		return st, err
	}
	to, after := done, itemKey{}
	if cur.pass == c && cur.to > cur.rolled {
		to, after = cur.to, cur.after
	}
	if cur.rolled >= to {
		return st, nil
	}
	runs, _, err := l.readPacks(ctx, b, cur.rolled, to)
	if err != nil {
		return st, err
	}
	items, order, next := itemsBefore(runs, cutoff, to)
	i := sort.Search(len(order), func(i int) bool { return after.before(order[i]) })
	for i < len(order) {
		n := bud.take(min(rollChunk, len(order)-i))
		if n == 0 {
			st.Left = true
			return st, nil
		}
		st.Taken += n
		if err := l.rollItems(ctx, order[i:i+n], items, &st); err != nil {
			return st, err
		}
		i += n
		if err := l.recordPass(ctx, b, c, to, order[i-1]); err != nil {
			return st, err
		}
	}
	return st, l.finishPass(ctx, b, c, next)
}

// itemsBefore groups runs' tuples of the hours before cutoff by L2 item,
// the items in (source, hour) order, and says the last run all of whose
// tuples are among them (at most to).
func itemsBefore(runs []runTuples, cutoff time.Time, to int64) (map[itemKey][]runTuples, []itemKey, int64) {
	items := map[itemKey][]runTuples{}
	var order []itemKey
	next := to
	for _, rt := range runs {
		for _, x := range rt.tuples {
			if !x.Minute.Before(cutoff) {
				next = min(next, rt.run-1)
				continue
			}
			k := itemKey{x.Source, bucketing.Hour(x.Minute)}
			if len(items[k]) == 0 {
				order = append(order, k)
			}
			items[k] = withTuple(items[k], rt.run, x)
		}
	}
	sort.Slice(order, func(i, j int) bool { return order[i].before(order[j]) })
	return items, order, next
}

// before: k sorts before o, by source then hour; the zero key before all.
func (k itemKey) before(o itemKey) bool {
	return k.source < o.source || k.source == o.source && k.slice < o.slice
}

// readCursor reads bucket b's cursor item, strongly consistent.
func (l *LSM) readCursor(ctx context.Context, b int) (rollCursor, error) {
	var cur rollCursor
	out, err := l.Client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(l.Table),
		Key:            key(rolledPK, l.rolledSK(b)),
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return cur, fmt.Errorf("roll-up: read the cursor of bucket %d: %w", b, err)
	}
	for name, n := range map[string]*int64{rolledRun: &cur.rolled, passedHour: &cur.passed, passHour: &cur.pass, passTo: &cur.to} {
		v, ok := out.Item[name].(*types.AttributeValueMemberN)
		if !ok {
			continue
		}
		if *n, err = strconv.ParseInt(v.Value, 10, 64); err != nil {
			return cur, fmt.Errorf("roll-up: the cursor of bucket %d: %s: %w", b, name, err)
		}
	}
	s, _ := out.Item[passSource].(*types.AttributeValueMemberS)
	h, _ := out.Item[passSlice].(*types.AttributeValueMemberS)
	if s != nil && h != nil {
		cur.after = itemKey{s.Value, h.Value}
	}
	return cur, nil
}

// recordPass records that bucket b's pass of cutoff c, to run to, has
// written every item up to last. Unconditional: every roll-up of the pass
// records only what it wrote or found written, so any record is true.
func (l *LSM) recordPass(ctx context.Context, b int, c, to int64, last itemKey) error {
	_, err := l.Client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                aws.String(l.Table),
		Key:                      key(rolledPK, l.rolledSK(b)),
		UpdateExpression:         aws.String("SET #p = :p, #t = :t, #s = :s, #h = :h"),
		ExpressionAttributeNames: map[string]string{"#p": passHour, "#t": passTo, "#s": passSource, "#h": passSlice},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":p": number(c), ":t": number(to),
			":s": &types.AttributeValueMemberS{Value: last.source}, ":h": &types.AttributeValueMemberS{Value: last.slice},
		},
	})
	if err != nil {
		return fmt.Errorf("roll-up: record the pass of bucket %d: %w", b, err)
	}
	return nil
}

// finishPass moves bucket b's cursor to next (never back) and records its
// pass of cutoff c done.
func (l *LSM) finishPass(ctx context.Context, b int, c, next int64) error {
	_, err := l.Client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(l.Table),
		Key:                       key(rolledPK, l.rolledSK(b)),
		UpdateExpression:          aws.String("SET #r = :r, #d = :d REMOVE #s, #h"),
		ConditionExpression:       aws.String("attribute_not_exists(#r) OR #r <= :r"),
		ExpressionAttributeNames:  map[string]string{"#r": rolledRun, "#d": passedHour, "#s": passSource, "#h": passSlice},
		ExpressionAttributeValues: map[string]types.AttributeValue{":r": number(next), ":d": number(c)},
	})
	if err != nil && !isCond(err) {
		return fmt.Errorf("roll-up: move the cursor of bucket %d: %w", b, err)
	}
	return nil
}

func number(n int64) *types.AttributeValueMemberN {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(n, 10)}
}
