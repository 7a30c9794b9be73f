package counts

import (
	"context"
	"fmt"
	"sort"
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

// Series is the counts of one type (or of all, when Type is empty), one
// point per bucket of the range, in time order, zeros included.
type Series struct {
	Type   string  `json:"type,omitempty"`
	Points []Point `json:"points"`
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

// Query is the Query of the counter items r needs: the hours of its range
// in the source's counter partition, with the capacity consumed.
func Query(table string, r Request) *dynamodb.QueryInput {
	return &dynamodb.QueryInput{
		TableName:                aws.String(table),
		KeyConditionExpression:   aws.String("#pk = :pk AND #sk BETWEEN :lo AND :hi"),
		ExpressionAttributeNames: map[string]string{"#pk": schema.PK, "#sk": schema.SK},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":pk": &types.AttributeValueMemberS{Value: bucketing.CounterPK(r.Source)},
			":lo": &types.AttributeValueMemberS{Value: bucketing.Hour(r.From)},
			":hi": &types.AttributeValueMemberS{Value: bucketing.Hour(r.To.Add(-time.Nanosecond))},
		},
		ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal,
	}
}

// Read answers r from the counter items of its range: one Query over the
// source's counter partition, paged by DynamoDB's 1 MB.
func Read(ctx context.Context, c QueryAPI, table string, r Request) (Response, error) {
	resp := Response{Interval: r.Name, From: r.From.Format(time.RFC3339), To: r.To.Format(time.RFC3339)}
	sums := map[string][]int64{}
	p := dynamodb.NewQueryPaginator(c, Query(table, r))
	for p.HasMorePages() {
		out, err := p.NextPage(ctx)
		resp.Plan.Requests++
		if err != nil {
			return resp, fmt.Errorf("read counters of %s: %w", r.Source, err)
		}
		if out.ConsumedCapacity != nil {
			resp.Plan.ConsumedRCU += aws.ToFloat64(out.ConsumedCapacity.CapacityUnits)
		}
		for _, it := range out.Items {
			if err := r.add(sums, it); err != nil {
				return resp, err
			}
		}
	}
	resp.Series = r.series(sums)
	return resp, nil
}

// add sums one counter item's minutes into their buckets, by type.
func (r Request) add(sums map[string][]int64, it map[string]types.AttributeValue) error {
	sk, _ := it[schema.SK].(*types.AttributeValueMemberS)
	if sk == nil {
		return fmt.Errorf("counter item without a sort key")
	}
	hour, err := time.Parse(bucketing.HourLayout, sk.Value)
	if err != nil {
		return fmt.Errorf("counter item %q: %w", sk.Value, err)
	}
	for name, v := range it {
		if len(name) < 4 || !strings.HasPrefix(name, countPrefix) {
			continue
		}
		typ, minute, n, err := counterOf(it, name, v)
		if err != nil {
			return fmt.Errorf("counter item %s: %w", sk.Value, err)
		}
		t := hour.Add(time.Duration(minute) * time.Minute)
		if t.Before(r.From) || !t.Before(r.To) || r.Type != "" && typ != r.Type {
			continue
		}
		if !r.GroupByType {
			typ = ""
		}
		if sums[typ] == nil {
			sums[typ] = make([]int64, r.Buckets())
		}
		sums[typ][t.Sub(r.From)/r.Interval] += n
	}
	return nil
}

// counterOf decodes the counter attribute name: c<mm><type id>.
func counterOf(it map[string]types.AttributeValue, name string, v types.AttributeValue) (typ string, minute int, n int64, err error) {
	minute, err = strconv.Atoi(name[1:3])
	if err != nil || minute < 0 || minute > 59 {
		return "", 0, 0, fmt.Errorf("counter %q: bad minute", name)
	}
	t, ok := it[typePrefix+name[3:]].(*types.AttributeValueMemberS)
	if !ok {
		return "", 0, 0, fmt.Errorf("counter %q: no type for id %q", name, name[3:])
	}
	num, ok := v.(*types.AttributeValueMemberN)
	if !ok {
		return "", 0, 0, fmt.Errorf("counter %q is not a number", name)
	}
	if n, err = strconv.ParseInt(num.Value, 10, 64); err != nil {
		return "", 0, 0, fmt.Errorf("counter %q: %w", name, err)
	}
	return t.Value, minute, n, nil
}

// series turns the sums into the answer's series: one without a type, or
// one per type with an event in the range, bytewise by type.
func (r Request) series(sums map[string][]int64) []Series {
	if !r.GroupByType {
		return []Series{r.points("", sums[""])}
	}
	typs := make([]string, 0, len(sums))
	for t := range sums {
		typs = append(typs, t)
	}
	sort.Strings(typs)
	out := make([]Series, 0, len(typs))
	for _, t := range typs {
		out = append(out, r.points(t, sums[t]))
	}
	return out
}

func (r Request) points(typ string, counts []int64) Series {
	s := Series{Type: typ, Points: make([]Point, r.Buckets())}
	for i := range s.Points {
		s.Points[i].T = r.From.Add(time.Duration(i) * r.Interval).Format(time.RFC3339)
		if counts != nil {
			s.Points[i].Count = counts[i]
		}
	}
	return s
}
