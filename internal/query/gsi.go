package query

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/shardline/shardline/internal/schema"
	"github.com/shardline/shardline/pkg/bucketing"
)

// gsi reads the time-bucket index, one bucket at a time, each held by the
// day's GSI shards, and skips the hours the day's hour index does not
// list. A bucket is an hour, or the whole day on a day whose schedule says
// DayBucket (a day after a quiet one): the day's partitions then go with
// the first hour of the day the page visits, and its other hours have
// none, so that segments still come end to end in the page's order. It is
// eventually consistent already, so it takes what it knows of a day from
// the container's cache (days.go). With the Lean projection its items
// carry no event, and fill fetches them from the table.
type gsi struct{}

func (gsi) name() string        { return PathGSI }
func (gsi) step() time.Duration { return time.Hour }
func (gsi) lean() bool          { return true }

// partitions are the GSI partitions of the hour starting at start; none
// when the day's hour index says the hour holds no event.
func (gsi) partitions(ctx context.Context, rn *run, start time.Time) ([]string, error) {
	day := bucketing.Day(start)
	d, err := rn.day(ctx, day, rn.p.Consistent)
	if err == nil && d.Sched == nil {
		d, err = rn.day(ctx, day, true) // the day may have begun since the cache read it
	}
	if err != nil || d.Sched == nil {
		return nil, err
	}
	from, to, bucket := start, start.Add(time.Hour), bucketing.Hour(start)
	if d.Sched[0].DayBucket {
		if !start.Equal(rn.firstHour(start)) {
			return nil, nil // the day's partitions went with its first hour
		}
		from, to = rn.dayRange(start)
		bucket = day
	}
	d, marked, err := rn.marked(ctx, day, from, to, rn.p.Consistent)
	if err != nil || !marked {
		return nil, err
	}
	pks := make([]string, 0, d.Sched.MaxGSIShards())
	for g := range d.Sched.MaxGSIShards() {
		pks = append(pks, bucketing.GSIPK(rn.p.Source, bucket, g))
	}
	return pks, nil
}

// firstHour is the start of the first hour bucket the page visits of the
// day of t: the range's first on the day in ascending order, its last in
// descending order.
func (rn *run) firstHour(t time.Time) time.Time {
	from, to := rn.dayRange(t)
	if rn.p.Order == Asc {
		return from.Truncate(time.Hour)
	}
	return to.Add(-time.Nanosecond).Truncate(time.Hour)
}

func (gsi) adapt(in *dynamodb.QueryInput) {
	in.IndexName = aws.String(schema.GSIName)
	in.ExpressionAttributeNames["#pk"] = schema.GSIPK
}
