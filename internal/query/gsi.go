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
// the day's GSI shards, and skips the hours the day's hour index does not
// list. It is eventually consistent already, so it takes what it knows of
// a day from the container's cache (days.go). With the Lean projection its
// items carry no event, and fill fetches them from the table.
type gsi struct{}

func (gsi) name() string        { return PathGSI }
func (gsi) step() time.Duration { return time.Hour }
func (gsi) lean() bool          { return true }

// partitions are the GSI shards of the hour starting at start; none when
// the day's hour index says the hour holds no event.
func (gsi) partitions(ctx context.Context, rn *run, start time.Time) ([]string, error) {
	d, marked, err := rn.hourDay(ctx, start)
	if err != nil || !marked {
		return nil, err
	}
	pks := make([]string, 0, d.Sched.MaxGSIShards())
	for g := range d.Sched.MaxGSIShards() {
		pks = append(pks, bucketing.GSIPK(rn.p.Source, bucketing.Hour(start), g))
	}
	return pks, nil
}

func (gsi) adapt(in *dynamodb.QueryInput) {
	in.IndexName = aws.String(schema.GSIName)
	in.ExpressionAttributeNames["#pk"] = schema.GSIPK
}
