package shardmap

import (
	"context"
	"fmt"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/shardline/shardline/internal/schema"
	"github.com/shardline/shardline/pkg/bucketing"
)

// record is a shard record as stored.
type record struct {
	sched   bucketing.Schedule // nil when there is no record
	ver     int                // the version read; a write stores ver+1 if the record still has ver
	expires int64              // the TTL attribute, Unix seconds; 0 when the record does not expire
}

// read reads the record of key, strongly consistent.
func (r *Registry) read(ctx context.Context, key string) (record, error) {
	return r.get(ctx, key, true)
}

// get reads the record of key.
func (r *Registry) get(ctx context.Context, key string, consistent bool) (record, error) {
	out, err := r.Client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(r.Table),
		Key:            metaKey(key),
		ConsistentRead: aws.Bool(consistent),
	})
	if err != nil {
		return record{}, fmt.Errorf("read shard record %s: %w", key, err)
	}
	if out.Item == nil {
		return record{}, nil
	}
	rec, err := decode(out.Item)
	if err != nil {
		return record{}, fmt.Errorf("shard record %s: %w", key, err)
	}
	return rec, nil
}

// write stores rec if the record is still at rec.ver (absent for 0).
func (r *Registry) write(ctx context.Context, key string, rec record) error {
	item := metaKey(key)
	steps := make([]types.AttributeValue, len(rec.sched))
	for i, st := range rec.sched {
		steps[i] = &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{
			"from": num(st.From), "n": num(st.Shards), "g": num(st.GSIShards),
		}}
	}
	attr := schema.Schedule
	if len(rec.sched) > 0 && rec.sched[0].DayBucket {
		attr = schema.DaySchedule
	}
	if len(rec.sched) > 0 && rec.sched[0].NoGSICopy {
		attr = schema.BaseSchedule
	}
	item[attr] = &types.AttributeValueMemberL{Value: steps}
	item[schema.Version] = num(rec.ver + 1)
	if rec.expires > 0 {
		item[schema.TTL] = &types.AttributeValueMemberN{Value: strconv.FormatInt(rec.expires, 10)}
	}
	in := &dynamodb.PutItemInput{TableName: aws.String(r.Table), Item: item}
	if rec.ver == 0 {
		in.ConditionExpression = aws.String("attribute_not_exists(#pk)")
		in.ExpressionAttributeNames = map[string]string{"#pk": schema.PK}
	} else {
		in.ConditionExpression = aws.String("#v = :v")
		in.ExpressionAttributeNames = map[string]string{"#v": schema.Version}
		in.ExpressionAttributeValues = map[string]types.AttributeValue{":v": num(rec.ver)}
	}
	if _, err := r.Client.PutItem(ctx, in); err != nil {
		return fmt.Errorf("write shard record %s: %w", key, err)
	}
	return nil
}

func metaKey(pk string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		schema.PK: &types.AttributeValueMemberS{Value: pk},
		schema.SK: &types.AttributeValueMemberS{Value: metaSK},
	}
}

func num(n int) types.AttributeValue { return &types.AttributeValueMemberN{Value: strconv.Itoa(n)} }

func decode(item map[string]types.AttributeValue) (record, error) {
	// A record of the releases before GSI_COPIES has "sched" or "dsched":
	// its events have copies.
	var l *types.AttributeValueMemberL
	daily, base := false, false
	for _, a := range []struct {
		name        string
		daily, base bool
	}{{schema.Schedule, false, false}, {schema.DaySchedule, true, false}, {schema.BaseSchedule, false, true}} {
		if v, ok := item[a.name].(*types.AttributeValueMemberL); ok {
			l, daily, base = v, a.daily, a.base
			break
		}
	}
	if l == nil {
		return record{}, fmt.Errorf("no %q, %q or %q list", schema.Schedule, schema.DaySchedule, schema.BaseSchedule)
	}
	ver, err := intAttr(item[schema.Version])
	if err != nil {
		return record{}, fmt.Errorf("version: %w", err)
	}
	var expires int64
	if ttl, ok := item[schema.TTL].(*types.AttributeValueMemberN); ok {
		if expires, err = strconv.ParseInt(ttl.Value, 10, 64); err != nil {
			return record{}, fmt.Errorf("%s: %w", schema.TTL, err)
		}
	}
	s := make(bucketing.Schedule, 0, len(l.Value))
	for i, v := range l.Value {
		m, ok := v.(*types.AttributeValueMemberM)
		if !ok {
			return record{}, fmt.Errorf("step %d is not a map", i)
		}
		st := bucketing.Step{DayBucket: daily, NoGSICopy: base}
		for name, dst := range map[string]*int{"from": &st.From, "n": &st.Shards, "g": &st.GSIShards} {
			if *dst, err = intAttr(m.Value[name]); err != nil {
				return record{}, fmt.Errorf("step %d %s: %w", i, name, err)
			}
		}
		s = append(s, st)
	}
	if err := s.Validate(); err != nil {
		return record{}, err
	}
	return record{sched: s, ver: ver, expires: expires}, nil
}

func intAttr(v types.AttributeValue) (int, error) {
	n, ok := v.(*types.AttributeValueMemberN)
	if !ok {
		return 0, fmt.Errorf("not a number")
	}
	return strconv.Atoi(n.Value)
}
