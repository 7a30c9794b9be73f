// Package catalog keeps the list of sources that wrote events on each UTC
// day, for GET /v1/sources: one small item per (source, day), written once,
// when the day's shard record is created, in one of the day's
// bucketing.CatalogShards partitions (a hash of the source picks it, so
// that the midnight start of every source heats no key), and read back by
// merging the day's partitions in the bytewise order of the sources
// (docs/keys.md).
package catalog

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/shardline/shardline/internal/schema"
	"github.com/shardline/shardline/pkg/bucketing"
)

// WriteAPI is the part of the DynamoDB client Record uses.
type WriteAPI interface {
	PutItem(context.Context, *dynamodb.PutItemInput, ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
}

// Lister is Record on c's table: the step a shard registry takes, by
// this name, before it creates a source's new day
// (shardmap.Registry.NewDay), so that the entry is written first.
func Lister(c WriteAPI, table string) func(ctx context.Context, source, day string, expires time.Time) error {
	return func(ctx context.Context, source, day string, expires time.Time) error {
		return Record(ctx, c, table, source, day, expires)
	}
}

// Record notes that source wrote events on day (a bucketing.DayLayout
// string), in the day's partition bucketing.CatalogShard picks. It is
// idempotent: the item is the same however often it is written. expires is
// when the entry may go, or zero for never.
func Record(ctx context.Context, c WriteAPI, table, source, day string, expires time.Time) error {
	item := map[string]types.AttributeValue{
		schema.PK: &types.AttributeValueMemberS{Value: bucketing.CatalogPK(day, bucketing.CatalogShard(source))},
		schema.SK: &types.AttributeValueMemberS{Value: source},
	}
	if !expires.IsZero() {
		item[schema.TTL] = &types.AttributeValueMemberN{Value: strconv.FormatInt(expires.Unix(), 10)}
	}
	if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: item}); err != nil {
		return fmt.Errorf("catalogue %s on %s: %w", source, day, err)
	}
	return nil
}
