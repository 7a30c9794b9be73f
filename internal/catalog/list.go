package catalog

import (
	"context"
	"fmt"
	"sort"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/shardline/shardline/internal/schema"
	"github.com/shardline/shardline/pkg/bucketing"
)

// ReadAPI is the part of the DynamoDB client List uses.
type ReadAPI interface {
	Query(context.Context, *dynamodb.QueryInput, ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
}

// Entry is a source and the days, of those listed, on which it wrote.
type Entry struct {
	Source string   `json:"source"`
	Days   []string `json:"days"`
}

// Page is one page of List.
type Page struct {
	Entries []Entry
	// Next is the source after which the next page starts; empty on the
	// last page.
	Next     string
	Requests int
	RCU      float64
}

// dayRead is what one day's partition gave: its sources in order, and
// whether there are more after the last.
type dayRead struct {
	sources   []string
	truncated bool
	rcu       float64
	err       error
}

// List lists the sources that wrote on any of days (DayLayout strings, in
// order), those bytewise after after, at most limit of them, each once with
// its days.
//
// It reads up to limit sources from each day's partition. A day that has
// more than that bounds the page: only sources up to the smallest such
// day's last are certain to have all their days known, so the page stops
// there and the next one starts after it. A page may so hold fewer than
// limit sources and still have a Next; paging returns every source once.
func List(ctx context.Context, c ReadAPI, table string, days []string, after string, limit int) (Page, error) {
	reads := readDays(ctx, c, table, days, after, limit)
	p := Page{Requests: len(days)}
	bound, bounded := "", false
	for i, r := range reads {
		if r.err != nil {
			return Page{}, fmt.Errorf("list sources of %s: %w", days[i], r.err)
		}
		p.RCU += r.rcu
		if r.truncated && len(r.sources) > 0 {
			if last := r.sources[len(r.sources)-1]; !bounded || last < bound {
				bound, bounded = last, true
			}
		}
	}
	byDay := map[string][]string{}
	for i, r := range reads {
		for _, s := range r.sources {
			if bounded && s > bound {
				break
			}
			byDay[s] = append(byDay[s], days[i])
		}
	}
	for s, d := range byDay {
		p.Entries = append(p.Entries, Entry{Source: s, Days: d})
	}
	sort.Slice(p.Entries, func(i, j int) bool { return p.Entries[i].Source < p.Entries[j].Source })
	switch {
	case len(p.Entries) > limit:
		p.Entries = p.Entries[:limit]
		p.Next = p.Entries[limit-1].Source
	case bounded:
		p.Next = bound
	}
	return p, nil
}

// readDays reads every day's partition at once, a few at a time.
func readDays(ctx context.Context, c ReadAPI, table string, days []string, after string, limit int) []dayRead {
	out := make([]dayRead, len(days))
	sem := make(chan struct{}, 8)
	var wg sync.WaitGroup
	for i, day := range days {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			out[i] = readDay(ctx, c, table, day, after, limit)
		}()
	}
	wg.Wait()
	return out
}

func readDay(ctx context.Context, c ReadAPI, table, day, after string, limit int) dayRead {
	in := &dynamodb.QueryInput{
		TableName:                aws.String(table),
		KeyConditionExpression:   aws.String("#pk = :pk"),
		ExpressionAttributeNames: map[string]string{"#pk": schema.PK, "#sk": schema.SK},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":pk": &types.AttributeValueMemberS{Value: bucketing.CatalogPK(day)},
		},
		ProjectionExpression:   aws.String("#sk"),
		Limit:                  aws.Int32(int32(limit)),
		ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal,
	}
	if after != "" {
		in.KeyConditionExpression = aws.String("#pk = :pk AND #sk > :after")
		in.ExpressionAttributeValues[":after"] = &types.AttributeValueMemberS{Value: after}
	}
	out, err := c.Query(ctx, in)
	if err != nil {
		return dayRead{err: err}
	}
	r := dayRead{truncated: out.LastEvaluatedKey != nil}
	if out.ConsumedCapacity != nil && out.ConsumedCapacity.CapacityUnits != nil {
		r.rcu = *out.ConsumedCapacity.CapacityUnits
	}
	for _, it := range out.Items {
		if v, ok := it[schema.SK].(*types.AttributeValueMemberS); ok {
			r.sources = append(r.sources, v.Value)
		}
	}
	return r
}
