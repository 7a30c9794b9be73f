package catalog

import (
	"context"
	"fmt"
	"slices"
	"strings"
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

// concurrency bounds the catalogue reads a page has in flight.
const concurrency = 32

// List lists the sources that wrote on any of days (DayLayout strings, in
// order), those bytewise after after, at most limit of them, each once with
// its days.
//
// A day's sources lie in bucketing.CatalogShards partitions, and in the
// one partition of the releases before the catalogue was spread
// (bucketing.LegacyCatalogPK), each in bytewise order. List merges all of
// them, every day's, as one sorted list: it reads each partition a chunk
// at a time, reads a partition's next chunk only once the merge has used
// the last, and stops once it has limit sources. A page so holds the next
// limit sources after after, or all that are left; paging returns every
// source once, whichever layout its entries were written in.
func List(ctx context.Context, c ReadAPI, table string, days []string, after string, limit int) (Page, error) {
	return ListPrefixed(ctx, c, table, days, nil, after, limit)
}

// ListPrefixed is List of only the sources that begin, bytewise, with one
// of prefixes (every source when there are none): a tenant's. Each
// partition is read once a prefix, by a key condition that begins with
// it, so no entry of a source outside them is read (or billed); the
// price is a request a partition for each prefix.
func ListPrefixed(ctx context.Context, c ReadAPI, table string, days, prefixes []string, after string, limit int) (Page, error) {
	parts := partitions(days, roots(prefixes), after, limit)
	var p Page
	for len(p.Entries) < limit {
		if err := fill(ctx, c, table, parts, after, &p); err != nil {
			return Page{}, err
		}
		e, ok := next(parts, days)
		if !ok {
			return p, nil
		}
		p.Entries = append(p.Entries, e)
	}
	for _, pt := range parts {
		if len(pt.buf) > 0 || !pt.done {
			p.Next = p.Entries[len(p.Entries)-1].Source
			break
		}
	}
	return p, nil
}

// part is one catalogue partition being read in order.
type part struct {
	day    int    // index in the days listed
	pk     string // the partition key
	prefix string // the sources read begin with it; "" for every source
	buf    []string
	start  map[string]types.AttributeValue // where the next read starts; nil for the first
	done   bool                            // nothing left to read
	chunk  int32                           // sources the next read asks for
}

// partitions lists the partitions of days, once for each of prefixes (once
// without any). A sharded partition holds about a sixteenth of a day's
// sources, so its first read asks for a little more than a sixteenth of
// the page; the legacy partition held all of a day's, so it asks for the
// page. A prefix whose sources all come before after is read not at all.
func partitions(days, prefixes []string, after string, limit int) []*part {
	shardChunk := int32(min(limit, limit*3/(2*bucketing.CatalogShards)+8))
	if len(prefixes) == 0 {
		prefixes = []string{""}
	}
	var out []*part
	for i, day := range days {
		for _, p := range prefixes {
			done := p != "" && after > p && !strings.HasPrefix(after, p)
			out = append(out, &part{day: i, pk: bucketing.LegacyCatalogPK(day), prefix: p, chunk: int32(limit), done: done})
			for s := range bucketing.CatalogShards {
				out = append(out, &part{day: i, pk: bucketing.CatalogPK(day, s), prefix: p, chunk: shardChunk, done: done})
			}
		}
	}
	return out
}

// roots are prefixes sorted, without those that begin with another: its
// sources are the other's already.
func roots(prefixes []string) []string {
	sorted := slices.Clone(prefixes)
	slices.Sort(sorted)
	var out []string
	for _, p := range sorted {
		if len(out) == 0 || !strings.HasPrefix(p, out[len(out)-1]) {
			out = append(out, p)
		}
	}
	return out
}

// next takes the smallest source left in parts, with the days of every
// partition that holds it. Every partition that may hold more has a
// source buffered (fill), so the smallest buffered one is the smallest
// left.
func next(parts []*part, days []string) (Entry, bool) {
	var src string
	found := false
	for _, pt := range parts {
		if len(pt.buf) > 0 && (!found || pt.buf[0] < src) {
			src, found = pt.buf[0], true
		}
	}
	if !found {
		return Entry{}, false
	}
	var idx []int
	for _, pt := range parts {
		if len(pt.buf) > 0 && pt.buf[0] == src {
			pt.buf = pt.buf[1:]
			idx = append(idx, pt.day)
		}
	}
	slices.Sort(idx)
	e := Entry{Source: src}
	for _, i := range slices.Compact(idx) {
		e.Days = append(e.Days, days[i])
	}
	return e, true
}

// fill reads the next chunk of every partition that has none buffered and
// may hold more, all at once, a few at a time, until each has a source
// buffered or is read to its end.
func fill(ctx context.Context, c ReadAPI, table string, parts []*part, after string, p *Page) error {
	for {
		var todo []*part
		for _, pt := range parts {
			if len(pt.buf) == 0 && !pt.done {
				todo = append(todo, pt)
			}
		}
		if len(todo) == 0 {
			return nil
		}
		if err := readAll(ctx, c, table, todo, after, p); err != nil {
			return err
		}
	}
}

// readAll reads the next chunk of each of todo at once, a few at a time.
func readAll(ctx context.Context, c ReadAPI, table string, todo []*part, after string, p *Page) error {
	rcu := make([]float64, len(todo))
	errs := make([]error, len(todo))
	sem := make(chan struct{}, concurrency)
	var wg sync.WaitGroup
	for i, pt := range todo {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			rcu[i], errs[i] = pt.read(ctx, c, table, after)
		}()
	}
	wg.Wait()
	p.Requests += len(todo)
	for i, pt := range todo {
		p.RCU += rcu[i]
		if errs[i] != nil {
			return fmt.Errorf("list sources of %s: %w", pt.pk, errs[i])
		}
	}
	return nil
}

// read reads the partition's next chunk of sources after after, and
// doubles the chunk for the read after it.
func (pt *part) read(ctx context.Context, c ReadAPI, table, after string) (float64, error) {
	in := &dynamodb.QueryInput{
		TableName:                aws.String(table),
		KeyConditionExpression:   aws.String("#pk = :pk"),
		ExpressionAttributeNames: map[string]string{"#pk": schema.PK, "#sk": schema.SK},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":pk": &types.AttributeValueMemberS{Value: pt.pk},
		},
		ProjectionExpression:   aws.String("#sk"),
		Limit:                  aws.Int32(pt.chunk),
		ExclusiveStartKey:      pt.start,
		ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal,
	}
	switch {
	case pt.prefix != "":
		// One condition on the sort key: the prefix's; a start after
		// after, when after is one of its sources, does the rest.
		in.KeyConditionExpression = aws.String("#pk = :pk AND begins_with(#sk, :prefix)")
		in.ExpressionAttributeValues[":prefix"] = &types.AttributeValueMemberS{Value: pt.prefix}
		if in.ExclusiveStartKey == nil && after != "" && strings.HasPrefix(after, pt.prefix) {
			in.ExclusiveStartKey = map[string]types.AttributeValue{
				schema.PK: &types.AttributeValueMemberS{Value: pt.pk},
				schema.SK: &types.AttributeValueMemberS{Value: after},
			}
		}
	case after != "":
		in.KeyConditionExpression = aws.String("#pk = :pk AND #sk > :after")
		in.ExpressionAttributeValues[":after"] = &types.AttributeValueMemberS{Value: after}
	}
	out, err := c.Query(ctx, in)
	if err != nil {
		return 0, err
	}
	var rcu float64
	if out.ConsumedCapacity != nil {
		rcu = aws.ToFloat64(out.ConsumedCapacity.CapacityUnits)
	}
	for _, it := range out.Items {
		if v, ok := it[schema.SK].(*types.AttributeValueMemberS); ok {
			pt.buf = append(pt.buf, v.Value)
		}
	}
	pt.start, pt.done = out.LastEvaluatedKey, out.LastEvaluatedKey == nil
	pt.chunk = min(2*pt.chunk, MaxLimit)
	return rcu, nil
}
