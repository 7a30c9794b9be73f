package counts

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/shardline/shardline/internal/schema"
)

// ErrBeforeChain is Chain.Redrive's answer for a batch that begins before
// its shard's chain does (or of a shard with no chain): it was given up
// under the previous release's per-source counter, and its Redrive
// (ops/sourcecounter) counts it.
var ErrBeforeChain = errors.New("counts: the batch begins before its stream shard's L0 chain: redrive it with the per-source counter (sourcecounter.Counter.Redrive)")

// RedriveStats says what a redrive did with a batch: Chain.Redrive, or
// the previous release's counter's (ops/sourcecounter).
type RedriveStats struct {
	Records int // stream records in the batch
	Counted int // events counted by this redrive
	Already int // events the batch's own attempts, or an earlier redrive, had counted
	Skipped int // records that do not count (not an event insert)
}

// Redrive counts the records of a batch of stream shard shardID that
// Lambda gave up on and that no link of the shard's chain holds: exactly
// once, however often it runs. A link holds every record of its shard
// from its first to its last (a batch is contiguous), so the links say
// which records were counted, and no note is needed. The missing records
// go to a chain of their own, named after the batch, whose tip makes a
// second redrive count nothing.
func (c *Chain) Redrive(ctx context.Context, shardID string, recs []events.DynamoDBEventRecord) (RedriveStats, error) {
	st := RedriveStats{Records: len(recs)}
	parsed, skipped, err := parse(recs)
	st.Skipped = skipped
	if err != nil || len(parsed) == 0 {
		return st, err
	}
	sortBySeq(parsed)
	start, err := c.firstLink(ctx, shardID)
	if err != nil {
		return st, err
	}
	if start == nil || SeqLess(parsed[0].seq, start.First) {
		return st, ErrBeforeChain
	}
	ranges, err := c.linksAround(ctx, shardID, parsed[0].seq, parsed[len(parsed)-1].seq)
	if err != nil {
		return st, err
	}
	want := map[string]bool{}
	for _, r := range parsed {
		if !covered(ranges, r.seq) {
			want[r.seq] = true
		}
	}
	var todo []events.DynamoDBEventRecord
	for _, r := range recs {
		if seq, err := CanonicalSeq(r.Change.SequenceNumber); err == nil && want[seq] {
			todo = append(todo, r)
		}
	}
	st.Already = len(parsed) - len(todo)
	if len(todo) == 0 {
		return st, nil
	}
	first, _, err := bounds(recs)
	if err != nil {
		return st, err
	}
	applied, err := c.Apply(ctx, "redrive/"+shardID+"/"+first, todo)
	st.Counted = applied.Counted
	st.Already += applied.Seen
	return st, err
}

// covered: a link of ranges (each {First, Last}) holds seq.
func covered(ranges []Link, seq string) bool {
	for _, l := range ranges {
		if !SeqLess(seq, l.First) && !SeqLess(l.Last, seq) {
			return true
		}
	}
	return false
}

// firstLink is the first link of shardID's chain, its pack left unread;
// nil when the chain has none.
func (c *Chain) firstLink(ctx context.Context, shardID string) (*Link, error) {
	out, err := c.Client.Query(ctx, c.rangeQuery(shardID, "#pk = :pk", nil, true, 1))
	if err != nil {
		return nil, fmt.Errorf("L0 chain of %s: read its first link: %w", shardID, err)
	}
	if len(out.Items) == 0 {
		return nil, nil
	}
	l, err := decodeRange(out.Items[0])
	return &l, err
}

// linksAround is the links of shardID's chain that may hold a record from
// first to last: those whose key is below last, back to the first whose
// key is below first (the one that may hold first). Packs are left unread.
func (c *Chain) linksAround(ctx context.Context, shardID, first, last string) ([]Link, error) {
	p := dynamodb.NewQueryPaginator(c.Client, c.rangeQuery(shardID, "#pk = :pk AND #sk < :last",
		map[string]types.AttributeValue{":last": &types.AttributeValueMemberS{Value: padSeq(last)}}, false, 0))
	var out []Link
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("L0 chain of %s: read its links: %w", shardID, err)
		}
		for _, it := range page.Items {
			l, err := decodeRange(it)
			if err != nil {
				return nil, fmt.Errorf("L0 chain of %s: %w", shardID, err)
			}
			out = append(out, l)
			if SeqLess(l.Key, first) {
				return out, nil
			}
		}
	}
	return out, nil
}

// rangeQuery reads links' keys, first and last (not their packs), in key
// order when forward, strongly consistent.
func (c *Chain) rangeQuery(shardID, cond string, vals map[string]types.AttributeValue, forward bool, limit int32) *dynamodb.QueryInput {
	if vals == nil {
		vals = map[string]types.AttributeValue{}
	}
	vals[":pk"] = &types.AttributeValueMemberS{Value: linkPK(shardID)}
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(c.Table),
		KeyConditionExpression:    aws.String(cond),
		ExpressionAttributeNames:  map[string]string{"#pk": schema.PK, "#sk": schema.SK, "#f": linkFirst, "#l": linkLast},
		ExpressionAttributeValues: vals,
		ProjectionExpression:      aws.String("#sk, #f, #l"),
		ScanIndexForward:          aws.Bool(forward),
		ConsistentRead:            aws.Bool(true),
	}
	if limit > 0 {
		in.Limit = aws.Int32(limit)
	}
	return in
}

// decodeRange reads a link's key, first and last.
func decodeRange(it map[string]types.AttributeValue) (Link, error) {
	sk, _ := it[schema.SK].(*types.AttributeValueMemberS)
	first, _ := it[linkFirst].(*types.AttributeValueMemberN)
	last, _ := it[linkLast].(*types.AttributeValueMemberN)
	if sk == nil || first == nil || last == nil {
		return Link{}, fmt.Errorf("a link lacks one of %s, %s, %s", schema.SK, linkFirst, linkLast)
	}
	var l Link
	var err error
	if l.Key, err = CanonicalSeq(sk.Value); err == nil {
		if l.First, err = CanonicalSeq(first.Value); err == nil {
			l.Last, err = CanonicalSeq(last.Value)
		}
	}
	return l, err
}

// bounds are the first and last sequence numbers of recs, canonical.
func bounds(recs []events.DynamoDBEventRecord) (first, last string, err error) {
	if len(recs) == 0 {
		return "", "", errors.New("no records")
	}
	if first, err = CanonicalSeq(recs[0].Change.SequenceNumber); err != nil {
		return "", "", err
	}
	last, err = CanonicalSeq(recs[len(recs)-1].Change.SequenceNumber)
	return first, last, err
}
