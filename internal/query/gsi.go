package query

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/shardline/shardline/internal/schema"
	"github.com/shardline/shardline/pkg/bucketing"
)

// gsi reads the time-bucket index, one hour bucket at a time, each held by
// the day's GSI shards. It is eventually consistent already, so it takes
// shard records from the registry's cache. With the Lean projection its
// items carry no event, and fill fetches them from the table.
type gsi struct{}

func (gsi) name() string        { return PathGSI }
func (gsi) step() time.Duration { return time.Hour }
func (gsi) lean() bool          { return true }

func (gsi) partitions(ctx context.Context, rn *run, start time.Time) ([]string, error) {
	sched, err := rn.schedule(ctx, bucketing.Day(start), rn.r.registry.Cached)
	if err != nil || sched == nil {
		return nil, err
	}
	pks := make([]string, 0, sched.MaxGSIShards())
	for g := range sched.MaxGSIShards() {
		pks = append(pks, bucketing.GSIPK(rn.p.Source, bucketing.Hour(start), g))
	}
	return pks, nil
}

func (gsi) adapt(in *dynamodb.QueryInput) {
	in.IndexName = aws.String(schema.GSIName)
	in.ExpressionAttributeNames["#pk"] = schema.GSIPK
}
