package counts

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/shardline/shardline/internal/schema"
	"github.com/shardline/shardline/pkg/bucketing"
)

// QueryAPI is the part of the DynamoDB client the reader uses.
type QueryAPI interface {
	Query(context.Context, *dynamodb.QueryInput, ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
}

// Response is the answer to GET /v1/counts.
type Response struct {
	Interval string   `json:"interval"`
	From     string   `json:"from"`
	To       string   `json:"to"`
	Series   []Series `json:"series"`
	Plan     Plan     `json:"plan"`
}

// Series is the counts of one type (or of all, when Type is empty and
// Other nil), one point per bucket of the range, in time order, zeros
// included. The "other" series, last when there is one, has Other set and
// no Type: it counts the events of the range that no other series holds.
type Series struct {
	Type   string  `json:"type,omitempty"`
	Other  *Other  `json:"other,omitempty"`
	Points []Point `json:"points"`
}

// Other says what the "other" series holds: the events of Types types that
// the answer leaves out (the smallest, so that it has at most MaxSeries
// series and fits Lambda's 6 MB), and, when Overflow is set, events the
// counter counted without their type (more than MaxTypesPerItem types in
// ten minutes of the range; docs/counts.md). With a `type` filter, such events
// may or may not be of that type.
type Other struct {
	Types    int  `json:"types"`
	Overflow bool `json:"overflow"`
}

// Point is the count of one bucket.
type Point struct {
	T     string `json:"t"`
	Count int64  `json:"count"`
}

// Plan says what a chart cost.
type Plan struct {
	Requests    int     `json:"requests"`
	ConsumedRCU float64 `json:"consumed_rcu"`
}

// Query is the Query of the counter items r needs: the ten-minute items
// of its range (and the whole-hour items written before them) in the
// source's counter partition, with the capacity consumed.
func Query(table string, r Request) *dynamodb.QueryInput {
	lo, hi := bucketing.CounterSKRange(r.From, r.To)
	return &dynamodb.QueryInput{
		TableName:                aws.String(table),
		KeyConditionExpression:   aws.String("#pk = :pk AND #sk BETWEEN :lo AND :hi"),
		ExpressionAttributeNames: map[string]string{"#pk": schema.PK, "#sk": schema.SK},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":pk": &types.AttributeValueMemberS{Value: bucketing.CounterPK(r.Source)},
			":lo": &types.AttributeValueMemberS{Value: lo},
			":hi": &types.AttributeValueMemberS{Value: hi},
		},
		ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal,
	}
}

// pages runs q page by page (DynamoDB's 1 MB), counting each request and
// the read units it consumed in plan, and calls each with every item.
func pages(ctx context.Context, c QueryAPI, q *dynamodb.QueryInput, plan *Plan, each func(map[string]types.AttributeValue) error) error {
	p := dynamodb.NewQueryPaginator(c, q)
	for p.HasMorePages() {
		out, err := p.NextPage(ctx)
		plan.Requests++
		if err != nil {
			return err
		}
		if out.ConsumedCapacity != nil {
			plan.ConsumedRCU += aws.ToFloat64(out.ConsumedCapacity.CapacityUnits)
		}
		for _, it := range out.Items {
			if err := each(it); err != nil {
				return err
			}
		}
	}
	return nil
}

// add sums one counter item's minutes into their buckets: by type, and the
// overflow apart unless the answer is one series of every event.
func (r Request) add(t tally, it map[string]types.AttributeValue) error {
	sk, _ := it[schema.SK].(*types.AttributeValueMemberS)
	if sk == nil {
		return fmt.Errorf("counter item without a sort key")
	}
	hour, _, err := bucketing.CounterSliceTime(sk.Value)
	if err != nil {
		return fmt.Errorf("counter item: %w", err)
	}
	for name, v := range it {
		var (
			typ    string
			minute int
			n      int64
			err    error
		)
		switch {
		case len(name) >= 4 && strings.HasPrefix(name, CountPrefix):
			typ, minute, n, err = counterOf(it, name, v)
		case len(name) == 3 && strings.HasPrefix(name, OverflowPrefix):
			minute, n, err = overflowOf(name, v)
		default:
			continue
		}
		if err != nil {
			return fmt.Errorf("counter item %s: %w", sk.Value, err)
		}
		r.count(t, hour.Add(time.Duration(minute)*time.Minute), typ, n)
	}
	return nil
}

// count adds n events of minute at and type typ ("" for the overflow,
// whose type is not kept) to the tally, if the answer asks for them.
func (r Request) count(t tally, at time.Time, typ string, n int64) {
	if at.Before(r.From) || !at.Before(r.To) || typ != "" && r.Type != "" && typ != r.Type {
		return
	}
	b := int(at.Sub(r.From) / r.Interval)
	if typ != "" && r.GroupByType {
		t.rank.add(typ, b, n)
		return
	}
	s := t.overflow
	switch {
	case typ != "" || r.Type == "" && !r.GroupByType:
		s = t.series("")
	}
	s.add(b, n)
}

// counterOf decodes the counter attribute name: c<mm><type id>.
func counterOf(it map[string]types.AttributeValue, name string, v types.AttributeValue) (typ string, minute int, n int64, err error) {
	t, ok := it[TypePrefix+name[3:]].(*types.AttributeValueMemberS)
	if !ok {
		return "", 0, 0, fmt.Errorf("counter %q: no type for id %q", name, name[3:])
	}
	minute, n, err = minuteCount(name, v)
	return t.Value, minute, n, err
}

// overflowOf decodes an overflow counter: o<mm>.
func overflowOf(name string, v types.AttributeValue) (minute int, n int64, err error) {
	return minuteCount(name, v)
}

// minuteCount reads the minute in a counter's name and its number.
func minuteCount(name string, v types.AttributeValue) (minute int, n int64, err error) {
	minute, err = strconv.Atoi(name[1:3])
	if err != nil || minute < 0 || minute > 59 {
		return 0, 0, fmt.Errorf("counter %q: bad minute", name)
	}
	num, ok := v.(*types.AttributeValueMemberN)
	if !ok {
		return 0, 0, fmt.Errorf("counter %q is not a number", name)
	}
	if n, err = strconv.ParseInt(num.Value, 10, 64); err != nil {
		return 0, 0, fmt.Errorf("counter %q: %w", name, err)
	}
	return minute, n, nil
}
