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

// Day is what a reader needs to know of a (stream, day) before it reads
// events: where they are, and roughly how many.
type Day struct {
	// Sched is the day's shard schedule; nil when nothing was written.
	Sched bucketing.Schedule
	// Indexed: the day has an hour index, so an hour not in Hours holds no
	// event. A day written before the index existed, or read between its
	// shard record's write and its first mark, has none: every hour may
	// hold events.
	Indexed bool
	// Hours has bit h set when hour h (UTC, 0 for 00:00–01:00) is marked.
	Hours uint32
	// Hints[h] is a lower bound of hour h's events (see Hours.Mark); -1
	// when the hour's mark carries none.
	Hints [24]int
}

// Marked says whether hour h may hold events.
func (d Day) Marked(h int) bool { return !d.Indexed || d.Hours&(1<<h) != 0 }

// Hint is a lower bound of hour h's events, or -1 when unknown. An hour
// that cannot hold events has 0.
func (d Day) Hint(h int) int {
	if !d.Indexed {
		return -1
	}
	if d.Hours&(1<<h) == 0 {
		return 0
	}
	return d.Hints[h]
}

// QueryAPI is the part of the DynamoDB client ReadDay uses.
type QueryAPI interface {
	Query(context.Context, *dynamodb.QueryInput, ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
}

// ReadDay reads the shard record and the hour index of stream on day with
// one strongly consistent Query of the partition they share: one request,
// whose read capacity it returns. Both are written before the events they
// describe, so what it finds covers every event acknowledged before it.
func ReadDay(ctx context.Context, c QueryAPI, table string, s bucketing.Stream, day string) (Day, float64, error) {
	pk := s.MetaPK(day)
	out, err := c.Query(ctx, &dynamodb.QueryInput{
		TableName: aws.String(table),
		// The partition's other items (the demand reports) sort before
		// the hour index.
		KeyConditionExpression:   aws.String("#pk = :pk AND #sk BETWEEN :hours AND :shards"),
		ExpressionAttributeNames: map[string]string{"#pk": schema.PK, "#sk": schema.SK},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":pk":     &types.AttributeValueMemberS{Value: pk},
			":hours":  &types.AttributeValueMemberS{Value: hoursSK},
			":shards": &types.AttributeValueMemberS{Value: metaSK},
		},
		ConsistentRead:         aws.Bool(true),
		ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal,
	})
	if err != nil {
		return Day{}, 0, fmt.Errorf("read shard record and hour index %s: %w", pk, err)
	}
	var rcu float64
	if out.ConsumedCapacity != nil {
		rcu = aws.ToFloat64(out.ConsumedCapacity.CapacityUnits)
	}
	d, err := DecodeDay(out.Items)
	if err != nil {
		return Day{}, rcu, fmt.Errorf("%s: %w", pk, err)
	}
	return d, rcu, nil
}

// DayKeys are the keys of the two items a reader needs of stream's day: its
// shard record and its hour index, for a BatchGetItem of several days.
func DayKeys(s bucketing.Stream, day string) []map[string]types.AttributeValue {
	return []map[string]types.AttributeValue{metaKey(s.MetaPK(day)), HoursKey(s, day)}
}

// DecodeDay reads the items of a day's metadata partition (both or either
// of its shard record and hour index; none for a day nothing was written
// on). The partition holds two small items, so one Query page always has
// both.
func DecodeDay(items []map[string]types.AttributeValue) (Day, error) {
	var d Day
	for _, it := range items {
		switch schema.S(it[schema.SK]) {
		case metaSK:
			rec, err := decode(it)
			if err != nil {
				return Day{}, fmt.Errorf("shard record: %w", err)
			}
			d.Sched = rec.sched
		case hoursSK:
			if err := d.addHours(it); err != nil {
				return Day{}, err
			}
		}
	}
	if d.Sched == nil {
		return Day{}, nil // an hour index without its record describes nothing readable
	}
	return d, nil
}

// addHours takes the hours and hints of an hour-index item into d.
func (d *Day) addHours(it map[string]types.AttributeValue) error {
	hours, err := DecodeHours(it)
	if err != nil {
		return err
	}
	d.Indexed = true
	for _, h := range hours {
		d.Hours |= 1 << h
	}
	for h := range d.Hints {
		d.Hints[h] = -1
		if n, ok := it[hintPrefix+fmt.Sprintf("%02d", h)].(*types.AttributeValueMemberN); ok {
			if v, err := strconv.Atoi(n.Value); err == nil && v >= 0 {
				d.Hints[h] = v
			}
		}
	}
	return nil
}

// QuietHour is how many events make an hour busy: a page of the default
// size (100) fits in one hour bucket of a busy hour, and walks several of
// quiet ones.
const QuietHour = 100

// Quiet says whether the day was quiet: never raised, and no hour of it
// known to hold QuietHour events or more. A day without an hour index, or
// with an hour whose hint is unknown, is not known quiet. Hints are lower
// bounds, so a busier day may pass for quiet; the next day's GSI day
// bucket then costs its readers no more than hour buckets would (see
// Registry.Schedule).
func (d Day) Quiet() bool {
	if len(d.Sched) != 1 || !d.Indexed || d.Hours == 0 {
		return false
	}
	for h := range 24 {
		if n := d.Hint(h); n < 0 || n >= QuietHour {
			return false
		}
	}
	return true
}
