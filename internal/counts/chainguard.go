package counts

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/shardline/shardline/internal/batchget"
	"github.com/shardline/shardline/internal/schema"
	"github.com/shardline/shardline/pkg/bucketing"
)

// The switch-over's guard (docs/counts.md, "Reading the previous releases'
// items, and the migration"): a chain's first links leave out what the
// per-source counter of the previous release counted.

// notCountedBefore is recs without those the per-source counter (the
// previous release) counted: a batch it counted in part may come again to
// a chain's first invocation, after the switch-over. It reads, strongly
// consistent and 100 at a time, the watermark of shardID in each counter
// item the batch touches, and drops the records at or below it. Only a
// chain's batches before its first link pay it: later ones cannot reach
// back before the chain.
func (c *Chain) notCountedBefore(ctx context.Context, shardID string, recs []record) ([]record, error) {
	sid := ShortID(shardID, ShardIDBytes)
	groups := group(recs)
	marks := map[itemKey]string{}
	for i := 0; i < len(groups); i += batchget.MaxKeys {
		var keys []map[string]types.AttributeValue
		for _, g := range groups[i:min(i+batchget.MaxKeys, len(groups))] {
			keys = append(keys, key(bucketing.CounterPK(g.source), g.slice))
		}
		if err := c.readMarks(ctx, sid, keys, marks); err != nil {
			return nil, fmt.Errorf("L0 chain of %s: read the per-source counter's watermarks: %w", shardID, err)
		}
	}
	var out []record
	for _, g := range groups {
		if m, ok := marks[itemKey{g.source, g.slice}]; ok {
			out = append(out, above(g.recs, m)...)
		} else {
			out = append(out, g.recs...)
		}
	}
	sortBySeq(out)
	return out, nil
}

// unprocessedRounds reads again, a little later each time, the keys
// DynamoDB left unprocessed: ten BatchGetItem rounds at most.
var unprocessedRounds = batchget.Rounds{
	Pause: func(n int) time.Duration { return time.Duration(n-1) * 50 * time.Millisecond },
	Most:  10,
}

// readMarks reads watermark sid of the counter items keys into marks.
func (c *Chain) readMarks(ctx context.Context, sid string, keys []map[string]types.AttributeValue, marks map[itemKey]string) error {
	_, err := unprocessedRounds.Read(ctx, keys, func(ctx context.Context, keys []batchget.Key) ([]batchget.Key, error) {
		out, err := c.Client.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: map[string]types.KeysAndAttributes{c.Table: {
			Keys:                     keys,
			ConsistentRead:           aws.Bool(true),
			ProjectionExpression:     aws.String("#pk, #sk, #w"),
			ExpressionAttributeNames: map[string]string{"#pk": schema.PK, "#sk": schema.SK, "#w": MarkPrefix + sid},
		}}})
		if err != nil {
			return nil, err
		}
		if err := takeMarks(sid, out.Responses[c.Table], marks); err != nil {
			return nil, err
		}
		return out.UnprocessedKeys[c.Table].Keys, nil
	})
	return err
}

// takeMarks puts watermark sid of the counter items items into marks.
func takeMarks(sid string, items []map[string]types.AttributeValue, marks map[itemKey]string) error {
	for _, it := range items {
		pk, _ := it[schema.PK].(*types.AttributeValueMemberS)
		sk, _ := it[schema.SK].(*types.AttributeValueMemberS)
		w, _ := it[MarkPrefix+sid].(*types.AttributeValueMemberN)
		if pk == nil || sk == nil || w == nil {
			continue
		}
		source, err := bucketing.ParseCounterPK(pk.Value)
		if err != nil {
			return err
		}
		m, err := CanonicalSeq(w.Value)
		if err != nil {
			return fmt.Errorf("counter %s %s: %w", source, sk.Value, err)
		}
		marks[itemKey{source, sk.Value}] = m
	}
	return nil
}
