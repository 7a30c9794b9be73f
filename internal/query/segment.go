package query

import (
	"context"
	"errors"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/shardline/shardline/internal/item"
	"github.com/shardline/shardline/internal/schema"
)

// segment is one bucket of the range (an hour on the GSI, a day on the
// base table) and the partitions that hold it. Segments do not overlap and
// are merged in order, so the page is their merged items end to end.
type segment struct {
	start time.Time
	parts []*partition
	err   error         // why it could not be opened; the page's error only if the page needs it
	ready chan struct{} // closed once opened
}

// partition reads one partition key's items within the page's bounds, in
// key order, one Query page at a time. It fetches its next page only when
// its buffer is drained and the merge needs its head, the way guregu/dynamo's
// queryIter.Next does: what a page reads is bounded by what it uses.
type partition struct {
	in   dynamodb.QueryInput
	buf  []map[string]types.AttributeValue
	done bool // the last page was read
	// byBytes: the page's filter passed fewer than half of the items a
	// read evaluated, so the next reads go without a Limit and evaluate
	// up to DynamoDB's 1 MB each (Limit counts items before the filter).
	byBytes bool
}

// drained: nothing buffered, and more to read.
func (pt *partition) drained() bool { return len(pt.buf) == 0 && !pt.done }

// share is how many items to ask each of k partitions for when the page can
// use n more. The shard hash spreads events evenly, so a partition holds
// about n/k of the next n, give or take a binomial's standard deviation:
// each is asked for three deviations over the mean, which one falls short
// of about once in a thousand, and one more for the cursor's own event,
// which the key condition includes. A partition that falls short is asked
// again, lazily.
func share(n, k int) int {
	k = max(k, 1)
	mean := float64(n) / float64(k)
	sd := math.Sqrt(mean * (1 - 1/float64(k)))
	return min(int(math.Ceil(mean+3*sd))+1, MaxLimit+2)
}

// open finds the segment's partitions and reads the first page of each,
// asking each for its share of n items.
func (pr *pageReader) open(ctx context.Context, seg *segment, n int) {
	defer close(seg.ready)
	pks, err := pr.via.partitions(ctx, pr.plan, seg.start)
	if err != nil {
		seg.err = err
		return
	}
	for _, pk := range pks {
		seg.parts = append(seg.parts, &partition{in: pr.input(pk)})
	}
	seg.err = pr.fetch(ctx, seg.parts, share(n, len(seg.parts)))
}

// input is the Query of partition pk within the page's bounds, with the
// page's filters. User input travels in expression attribute values only.
func (pr *pageReader) input(pk partKey) dynamodb.QueryInput {
	in := dynamodb.QueryInput{
		TableName:                aws.String(pr.reqs.table),
		KeyConditionExpression:   aws.String("#pk = :pk AND #sk BETWEEN :lo AND :hi"),
		ExpressionAttributeNames: map[string]string{"#pk": schema.PK, "#sk": schema.SK},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":pk": &types.AttributeValueMemberS{Value: pk.pk},
			":lo": &types.AttributeValueMemberS{Value: pr.b.lo},
			":hi": &types.AttributeValueMemberS{Value: pr.b.hi},
		},
		ScanIndexForward:       aws.Bool(pr.p.Order == Asc),
		ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal,
	}
	pr.via.adapt(&in, pk)
	var filters []string
	for _, f := range []struct{ attr, val string }{{schema.Type, pr.p.Type}, {schema.Subject, pr.p.Subject}} {
		if f.val == "" {
			continue
		}
		n := "#" + f.attr
		in.ExpressionAttributeNames[n] = f.attr
		in.ExpressionAttributeValues[":"+f.attr] = &types.AttributeValueMemberS{Value: f.val}
		filters = append(filters, n+" = :"+f.attr)
	}
	if pr.kind == Quarantine && pr.p.Tenant != "" {
		// A tenant's quarantine: the records that arrived for it.
		in.ExpressionAttributeNames["#origin"] = schema.Origin
		in.ExpressionAttributeNames["#tenant"] = item.OriginTenant
		in.ExpressionAttributeValues[":tenant"] = &types.AttributeValueMemberS{Value: pr.p.Tenant}
		filters = append(filters, "#origin.#tenant = :tenant")
	}
	if len(filters) > 0 {
		in.FilterExpression = aws.String(strings.Join(filters, " AND "))
	}
	return in
}

// fetch reads the next page of every drained partition, in parallel, each
// of at most limit items.
func (pr *pageReader) fetch(ctx context.Context, parts []*partition, limit int) error {
	var wg sync.WaitGroup
	errs := make([]error, len(parts))
	for i, pt := range parts {
		if !pt.drained() {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = pr.fetchOne(ctx, pt, limit)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// fetchOne reads pt's next page, of at most limit items; or, once a filter
// showed it passes few of them, of as many as DynamoDB reads in a request.
func (pr *pageReader) fetchOne(ctx context.Context, pt *partition, limit int) error {
	in := pt.in
	if !pt.byBytes {
		in.Limit = aws.Int32(int32(limit))
	}
	out, err := pr.reqs.query(ctx, &in)
	if err != nil {
		return err
	}
	if in.FilterExpression != nil && out.ScannedCount > 2*out.Count {
		pt.byBytes = true
	}
	pt.buf = append(pt.buf, out.Items...)
	if len(out.LastEvaluatedKey) == 0 {
		pt.done = true
	} else {
		pt.in.ExclusiveStartKey = out.LastEvaluatedKey
	}
	return nil
}

// merge moves the segment's items into the page in the page's order, until
// the page is full or the segment is exhausted. The cursor's own event,
// which the key condition includes, is passed over.
func (pr *pageReader) merge(ctx context.Context, seg *segment, pg *collector) error {
	for !pg.full() {
		if err := pr.refill(ctx, seg, pg.need()); err != nil {
			return err
		}
		pt := pr.head(seg.parts)
		if pt == nil {
			return nil
		}
		it := pt.buf[0]
		pt.buf = pt.buf[1:]
		if sk := schema.S(it[schema.SK]); sk != pr.b.skip {
			pg.add(row{item: it, sk: sk, size: pr.size(it)})
		}
	}
	return nil
}

// refill reads on every drained partition of seg until each has an item
// buffered or is exhausted: any of them may hold the next item. (A filter
// can make a partition's page come back empty with more to read.) Each is
// asked for its share of the n items the page can use, split between the
// partitions that still have items to read.
func (pr *pageReader) refill(ctx context.Context, seg *segment, n int) error {
	for {
		live, drained := 0, 0
		for _, pt := range seg.parts {
			if !pt.done {
				live++
			}
			if pt.drained() {
				drained++
			}
		}
		if drained == 0 {
			return nil
		}
		if err := pr.fetch(ctx, seg.parts, share(n, live)); err != nil {
			return err
		}
	}
}

// head is the partition whose next item comes first in the page's order,
// or nil when every partition is exhausted.
func (pr *pageReader) head(parts []*partition) *partition {
	asc := pr.p.Order == Asc
	var best *partition
	var bestSK string
	for _, pt := range parts {
		if len(pt.buf) == 0 {
			continue
		}
		sk := schema.S(pt.buf[0][schema.SK])
		if best == nil || (asc && sk < bestSK) || (!asc && sk > bestSK) {
			best, bestSK = pt, sk
		}
	}
	return best
}
