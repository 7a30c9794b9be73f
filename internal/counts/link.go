package counts

import (
	"context"
	"fmt"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/shardline/shardline/internal/schema"
)

// Link is one link of a stream shard's L0 chain, read back: it counts the
// records of the shard from First to Last, each once, and extends the tip
// Key (the Last of the link before it, or "0" for the chain's first).
type Link struct {
	Key, First, Last string // canonical sequence numbers
	N                int    // events counted
	Tuples           []Tuple
}

// ReadLinks reads the links of shardID's chain whose key is at or after
// from (a canonical sequence number; "0" for all), in chain order,
// strongly consistent. The fold (L1) and the redrive of a given-up batch
// read links this way.
func ReadLinks(ctx context.Context, c QueryAPI, table, shardID, from string) ([]Link, error) {
	p := dynamodb.NewQueryPaginator(c, &dynamodb.QueryInput{
		TableName:                aws.String(table),
		KeyConditionExpression:   aws.String("#pk = :pk AND #sk >= :from"),
		ExpressionAttributeNames: map[string]string{"#pk": schema.PK, "#sk": schema.SK},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":pk":   &types.AttributeValueMemberS{Value: linkPK(shardID)},
			":from": &types.AttributeValueMemberS{Value: padSeq(from)},
		},
		ConsistentRead: aws.Bool(true),
	})
	var out []Link
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("read the L0 chain of %s: %w", shardID, err)
		}
		for _, it := range page.Items {
			l, err := decodeLink(it)
			if err != nil {
				return nil, fmt.Errorf("the L0 chain of %s: %w", shardID, err)
			}
			out = append(out, l)
		}
	}
	return out, nil
}

// decodeLink reads a link item.
func decodeLink(it map[string]types.AttributeValue) (Link, error) {
	sk, _ := it[schema.SK].(*types.AttributeValueMemberS)
	first, _ := it[linkFirst].(*types.AttributeValueMemberN)
	last, _ := it[linkLast].(*types.AttributeValueMemberN)
	n, _ := it[linkN].(*types.AttributeValueMemberN)
	pack, _ := it[linkPack].(*types.AttributeValueMemberB)
	if sk == nil || first == nil || last == nil || n == nil || pack == nil {
		return Link{}, fmt.Errorf("a link lacks one of %s, %s, %s, %s, %s", schema.SK, linkFirst, linkLast, linkN, linkPack)
	}
	var l Link
	var err error
	if l.Key, err = CanonicalSeq(sk.Value); err != nil {
		return Link{}, fmt.Errorf("link key: %w", err)
	}
	if l.First, err = CanonicalSeq(first.Value); err != nil {
		return Link{}, fmt.Errorf("link %s: %w", l.Key, err)
	}
	if l.Last, err = CanonicalSeq(last.Value); err != nil {
		return Link{}, fmt.Errorf("link %s: %w", l.Key, err)
	}
	if l.N, err = strconv.Atoi(n.Value); err != nil {
		return Link{}, fmt.Errorf("link %s: %w", l.Key, err)
	}
	if l.Tuples, err = decodePack(pack.Value); err != nil {
		return Link{}, fmt.Errorf("link %s: %w", l.Key, err)
	}
	return l, nil
}
