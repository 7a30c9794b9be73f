package replay

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/shardline/shardline/internal/item"
	"github.com/shardline/shardline/internal/schema"
)

// MarkAPI is the part of the DynamoDB client that marks records.
type MarkAPI interface {
	UpdateItem(context.Context, *dynamodb.UpdateItemInput, ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
}

// errAlreadyStored: the record was marked stored, or is gone, by the time
// the mark was written.
var errAlreadyStored = errors.New("already marked stored, or expired")

// markCondition lets a mark through only on a record that still exists (an
// UpdateItem would otherwise create a stub of an expired one) and that no
// replay has marked stored: a record is marked stored once, by whichever
// replay gets there first; every other replay that stored its events at
// the same time wrote the very same items.
const markCondition = "attribute_exists(#pk) AND (attribute_not_exists(#st) OR #st <> :stored)"

// mark records v on rec, at.
func mark(ctx context.Context, c MarkAPI, table string, rec Record, v verdict, at time.Time) error {
	_, err := c.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(table),
		Key: map[string]types.AttributeValue{
			schema.PK: &types.AttributeValueMemberS{Value: rec.PK},
			schema.SK: &types.AttributeValueMemberS{Value: rec.SK},
		},
		UpdateExpression:    aws.String("SET #at = :at, #st = :st, #o = :o"),
		ConditionExpression: aws.String(markCondition),
		ExpressionAttributeNames: map[string]string{
			"#pk": schema.PK, "#at": schema.ReplayedAt, "#st": schema.ReplayState, "#o": schema.ReplayOutcome,
		},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":at":     &types.AttributeValueMemberS{Value: at.UTC().Format(time.RFC3339Nano)},
			":st":     &types.AttributeValueMemberS{Value: string(v.state)},
			":o":      &types.AttributeValueMemberS{Value: v.outcome},
			":stored": &types.AttributeValueMemberS{Value: string(item.ReplayStored)},
		},
	})
	var cond *types.ConditionalCheckFailedException
	if errors.As(err, &cond) {
		return errAlreadyStored
	}
	if err != nil {
		return fmt.Errorf("mark quarantined record %s: %w", rec.Name(), err)
	}
	return nil
}
