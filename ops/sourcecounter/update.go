package sourcecounter

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/shardline/shardline/internal/counts"
	"github.com/shardline/shardline/internal/ddberr"
	"github.com/shardline/shardline/internal/schema"
	"github.com/shardline/shardline/pkg/bucketing"
)

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
	s, err := counts.CanonicalSeq(n.Value)
	if err != nil {
		return nil, fmt.Errorf("watermark: %w", err)
	}
	return &s, nil
}
