package counts

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/shardline/shardline/internal/schema"
	"github.com/shardline/shardline/pkg/bucketing"
)

// RollupStats says what one Rollup did.
type RollupStats struct {
	Buckets   int     // buckets with runs to roll
	Items     int     // L2 items written
	Conflicts int     // L2 writes refused by their watermark, then read again
	WCU       float64 // write capacity the L2 writes consumed
	// Overflowed is the events written without their type, their ten
	// minutes keeping MaxTypes types already: what the per-source
	// counter's CounterOverflow metric counts, by source in
	// OverflowBySource.
	Overflowed       int64
	OverflowBySource map[string]int64
	// Taken is the L2 items read (and written when they lacked runs)
	// against RollupItems; Left, that the budget ran out before every
	// bucket's pass of the hour was done.
	Taken int
	Left  bool
}

// addOverflow counts n events of source written without their type.
func (st *RollupStats) addOverflow(source string, n int64) {
	if n == 0 {
		return
	}
	if st.OverflowBySource == nil {
		st.OverflowBySource = map[string]int64{}
	}
	st.OverflowBySource[source] += n
	st.Overflowed += n
}

// runTuples is the tuples of one source in one run.
type runTuples struct {
	run    int64
	tuples []Tuple
}

// withTuple is list, the runs' tuples of one key in run order, with x of
// run added: to the last run's when it is run, else in a run of its own.
func withTuple(list []runTuples, run int64, x Tuple) []runTuples {
	if len(list) == 0 || list[len(list)-1].run != run {
		list = append(list, runTuples{run: run})
	}
	list[len(list)-1].tuples = append(list[len(list)-1].tuples, x)
	return list
}

// Rollup writes into L2 the tuples of the done runs whose hour has ended:
// one item per (source, hour), pk C#<source>, sk the hour (the key of the
// hour items of the releases before ten-minute items, which every chart's
// Query reads). An item holds its counts packed and the last run it holds;
// a write adds only the runs above it, on condition that it has not moved,
// so a roll-up run twice, or stopped half way and run again, adds each run
// to an item once. A quiet source's hour is written once, after the hour.
//
// One Rollup takes at most RollupItems items (and none when its context
// ends within rollReserve); it then answers Left, and the next Rollup of
// the same hour goes on where each bucket's pass stopped (rollpass.go).
func (l *LSM) Rollup(ctx context.Context) (RollupStats, error) {
	var st RollupStats
	done, err := l.getNumber(ctx, foldPK, foldStateSK, foldDone)
	if err != nil {
		return st, fmt.Errorf("roll-up: %w", err)
	}
	cutoff := l.now().UTC().Truncate(time.Hour)
	bud := newBudget(ctx, l.rollupItems())
	var mu sync.Mutex
	err = l.each(l.buckets(), func(b int) error {
		bs, err := l.rollBucket(ctx, b, done, cutoff, bud)
		mu.Lock()
		defer mu.Unlock()
		if bs.Items > 0 || err != nil {
			st.Buckets++
		}
		st.Items += bs.Items
		st.Taken += bs.Taken
		st.Conflicts += bs.Conflicts
		st.WCU += bs.WCU
		st.Left = st.Left || bs.Left
		for source, n := range bs.OverflowBySource {
			st.addOverflow(source, n)
		}
		return err
	})
	return st, err
}

// rollItems writes the L2 items keys, Concurrency at a time.
func (l *LSM) rollItems(ctx context.Context, keys []itemKey, items map[itemKey][]runTuples, st *RollupStats) error {
	var mu sync.Mutex
	return l.each(len(keys), func(i int) error {
		k := keys[i]
		wrote, overflowed, conflicts, wcu, err := l.rollItem(ctx, k, items[k])
		mu.Lock()
		defer mu.Unlock()
		if wrote {
			st.Items++
			st.addOverflow(k.source, overflowed)
		}
		st.Conflicts += conflicts
		st.WCU += wcu
		return err
	})
}

// readPacks reads bucket b's packs of the runs after from, up to to, in
// run order, as each run's tuples (of source only, when given), strongly
// consistent.
func (l *LSM) readPacks(ctx context.Context, b int, from, to int64, source ...string) ([]runTuples, Plan, error) {
	var plan Plan
	p := dynamodb.NewQueryPaginator(l.Client, &dynamodb.QueryInput{
		TableName:                aws.String(l.Table),
		KeyConditionExpression:   aws.String("#pk = :pk AND #sk BETWEEN :lo AND :hi"),
		ExpressionAttributeNames: map[string]string{"#pk": schema.PK, "#sk": schema.SK},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":pk": &types.AttributeValueMemberS{Value: l.packPK(b)},
			":lo": &types.AttributeValueMemberS{Value: padRun(from + 1)},
			":hi": &types.AttributeValueMemberS{Value: padRun(to) + packPartSep + "~"},
		},
		ConsistentRead:         aws.Bool(true),
		ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal,
	})
	var out []runTuples
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		plan.Requests++
		if err != nil {
			return nil, plan, fmt.Errorf("read the L1 packs of bucket %d: %w", b, err)
		}
		if page.ConsumedCapacity != nil {
			plan.ConsumedRCU += aws.ToFloat64(page.ConsumedCapacity.CapacityUnits)
		}
		for _, it := range page.Items {
			rv, _ := it[packRun].(*types.AttributeValueMemberN)
			pv, _ := it[l2Pack].(*types.AttributeValueMemberB)
			if rv == nil || pv == nil {
				return nil, plan, fmt.Errorf("an L1 pack of bucket %d lacks %s or %s", b, packRun, l2Pack)
			}
			run, err := strconv.ParseInt(rv.Value, 10, 64)
			if err != nil {
				return nil, plan, fmt.Errorf("an L1 pack of bucket %d: %w", b, err)
			}
			ts, err := decodePack(pv.Value)
			if err != nil {
				return nil, plan, fmt.Errorf("the L1 pack of bucket %d, run %d: %w", b, run, err)
			}
			if len(source) > 0 {
				ts = ofSource(ts, source[0])
			}
			if len(out) == 0 || out[len(out)-1].run != run {
				out = append(out, runTuples{run: run})
			}
			out[len(out)-1].tuples = append(out[len(out)-1].tuples, ts...)
		}
	}
	return out, plan, nil
}

func ofSource(ts []Tuple, source string) []Tuple {
	var out []Tuple
	for _, x := range ts {
		if x.Source == source {
			out = append(out, x)
		}
	}
	return out
}

// maxRollAttempts bounds the writes of one L2 item a roll-up loses to
// another roll-up.
const maxRollAttempts = 8

// rollItem adds to L2 item k the tuples of runs above its watermark, and
// says how many of their events it wrote without their type.
func (l *LSM) rollItem(ctx context.Context, k itemKey, runs []runTuples) (wrote bool, overflowed int64, conflicts int, wcu float64, err error) {
	for range maxRollAttempts {
		it, err := l.readL2(ctx, k)
		if err != nil {
			return false, 0, conflicts, wcu, err
		}
		add := it.above(runs)
		if len(add) == 0 {
			return false, 0, conflicts, wcu, nil
		}
		capped := capTypes(it.tuples, add, l.maxTypes())
		overflowed = 0
		for i, x := range capped {
			if x.Type == overflowType && add[i].Type != overflowType {
				overflowed += x.N
			}
		}
		used, err := l.writeL2(ctx, k, it, append(it.tuples, capped...), runs[len(runs)-1].run)
		wcu += used
		switch {
		case err == nil:
			return true, overflowed, conflicts, wcu, nil
		case isCond(err):
			conflicts++
		default:
			return false, 0, conflicts, wcu, err
		}
	}
	return false, 0, conflicts, wcu, fmt.Errorf("roll-up: %s %s: %d writes refused in a row", k.source, k.slice, maxRollAttempts)
}

// writeL2 sets L2 item k's counts to tuples and its watermark to run, on
// condition that its watermark is still the one read in it.
func (l *LSM) writeL2(ctx context.Context, k itemKey, it l2Item, tuples []Tuple, run int64) (wcu float64, err error) {
	hour, _, err := bucketing.CounterSliceTime(k.slice)
	if err != nil {
		return 0, err
	}
	for i := range tuples {
		tuples[i].Source = ""
	}
	p, err := encodePack(tuples)
	if err != nil {
		return 0, err
	}
	cond := "#w = :w"
	vals := map[string]types.AttributeValue{
		":p":   &types.AttributeValueMemberB{Value: p},
		":run": &types.AttributeValueMemberN{Value: strconv.FormatInt(run, 10)},
		":exp": &types.AttributeValueMemberN{Value: strconv.FormatInt(hour.Add(time.Hour+l.Retention+24*time.Hour).Unix(), 10)},
	}
	if it.mark == 0 {
		cond = "attribute_not_exists(#w)"
	} else {
		vals[":w"] = &types.AttributeValueMemberN{Value: strconv.FormatInt(it.mark, 10)}
	}
	out, err := l.Client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(l.Table),
		Key:                       key(bucketing.CounterPK(k.source), k.slice),
		UpdateExpression:          aws.String("SET #p = :p, #w = :run, #exp = :exp"),
		ConditionExpression:       aws.String(cond),
		ExpressionAttributeNames:  map[string]string{"#p": l2Pack, "#w": l2Mark, "#exp": schema.TTL},
		ExpressionAttributeValues: vals,
		ReturnConsumedCapacity:    types.ReturnConsumedCapacityTotal,
	})
	if out != nil && out.ConsumedCapacity != nil {
		wcu = aws.ToFloat64(out.ConsumedCapacity.CapacityUnits)
	}
	if err != nil && !isCond(err) {
		return wcu, fmt.Errorf("roll-up: write %s %s: %w", k.source, k.slice, err)
	}
	return wcu, err
}

// l2Item is an L2 item's packed counts and watermark.
type l2Item struct {
	tuples []Tuple
	mark   int64
}

// above is the tuples of runs above the item's watermark, in run order.
func (it l2Item) above(runs []runTuples) []Tuple {
	var out []Tuple
	for _, rt := range runs {
		if rt.run > it.mark {
			out = append(out, rt.tuples...)
		}
	}
	return out
}

// readL2 reads L2 item k's packed counts and watermark, strongly
// consistent.
func (l *LSM) readL2(ctx context.Context, k itemKey) (l2Item, error) {
	out, err := l.Client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:                aws.String(l.Table),
		Key:                      key(bucketing.CounterPK(k.source), k.slice),
		ConsistentRead:           aws.Bool(true),
		ProjectionExpression:     aws.String("#p, #w"),
		ExpressionAttributeNames: map[string]string{"#p": l2Pack, "#w": l2Mark},
	})
	if err != nil {
		return l2Item{}, fmt.Errorf("roll-up: read %s %s: %w", k.source, k.slice, err)
	}
	return decodeL2(out.Item)
}

// decodeL2 reads the L2 part of a counter item: none in an item of the
// per-source counter.
func decodeL2(it map[string]types.AttributeValue) (l2Item, error) {
	var out l2Item
	if w, ok := it[l2Mark].(*types.AttributeValueMemberN); ok {
		n, err := strconv.ParseInt(w.Value, 10, 64)
		if err != nil {
			return out, fmt.Errorf("an L2 item's %s: %w", l2Mark, err)
		}
		out.mark = n
	}
	if p, ok := it[l2Pack].(*types.AttributeValueMemberB); ok {
		ts, err := decodePack(p.Value)
		if err != nil {
			return out, fmt.Errorf("an L2 item: %w", err)
		}
		out.tuples = ts
	}
	return out, nil
}

// capTypes is add with the 100-types rule applied per ten minutes
// (bucketing.CounterSlice), after the types have holds already: a tuple
// keeps its type when its ten minutes count it by name, or have room for
// it; otherwise its type becomes overflowType. Tuples are taken in order,
// so the first types met are the ones kept, as in the per-source counter.
func capTypes(have, add []Tuple, limit int) []Tuple {
	kept := map[int64]map[string]bool{}
	note := func(x Tuple) map[string]bool {
		s := x.Minute.Truncate(bucketing.CounterSlice).Unix()
		if kept[s] == nil {
			kept[s] = map[string]bool{}
		}
		return kept[s]
	}
	for _, x := range have {
		if x.Type != overflowType {
			note(x)[x.Type] = true
		}
	}
	out := make([]Tuple, len(add))
	for i, x := range add {
		k := note(x)
		switch {
		case x.Type == overflowType || k[x.Type]:
		case len(k) < limit:
			k[x.Type] = true
		default:
			x.Type = overflowType
		}
		out[i] = x
	}
	return out
}
