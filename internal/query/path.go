package query

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/shardline/shardline/internal/schema"
	"github.com/shardline/shardline/internal/shardmap"
	"github.com/shardline/shardline/pkg/bucketing"
)

// path is a way to read a range: the GSI or the base table's
// shards. A page reads the path's buckets in order; each
// bucket is held by a few partitions, which the path names.
type path interface {
	// name is the path's name in the plan.
	name() string
	// step is the length of the path's buckets.
	step() time.Duration
	// partitions lists the partition keys that hold the bucket starting at
	// start.
	partitions(ctx context.Context, pl *planner, start time.Time) ([]partKey, error)
	// adapt sets what the path's query of pk needs besides the key
	// condition: the index, the read consistency.
	adapt(in *dynamodb.QueryInput, pk partKey)
	// lean: the path's items may come without their event, which fill then
	// fetches from the table.
	lean() bool
}

// partKey is a partition key a page reads: of the GSI, or, on the
// table, of a day's shard.
type partKey struct {
	pk    string
	table bool // the base table's, though the path is the GSI's
}

// gsi reads the time-bucket index, one bucket at a time, each held by the
// day's GSI shards, and skips the hours the day's hour index does not
// list. A bucket is an hour, or the whole day on a day whose schedule says
// DayBucket (a day after a quiet one): the day's partitions then go with
// the first hour of the day the page visits, and its other hours have
// none, so that segments still come end to end in the page's order. A day
// without GSI copies (Step.NoGSICopy) is read the same way, from the
// table's shards of the day, which hold its every event: the GSI has none
// of them. It is eventually consistent already, so it takes what it knows
// of a day from the container's cache (days.go). With the Lean projection
// its items carry no event, and fill fetches them from the table.
type gsi struct{}

func (gsi) name() string        { return PathGSI }
func (gsi) step() time.Duration { return time.Hour }
func (gsi) lean() bool          { return true }

// partitions are the GSI partitions of the hour starting at start; none
// when the day's hour index says the hour holds no event.
func (gsi) partitions(ctx context.Context, pl *planner, start time.Time) ([]partKey, error) {
	day := bucketing.Day(start)
	d, err := pl.day(ctx, day, pl.p.Consistent)
	if err == nil && d.Sched == nil {
		d, err = pl.day(ctx, day, true) // the day may have begun since the cache read it
	}
	if err != nil || d.Sched == nil {
		return nil, err
	}
	from, to, bucket := start, start.Add(time.Hour), bucketing.Hour(start)
	if dayWide(d) {
		if !start.Equal(pl.firstHour(start)) {
			return nil, nil // the day's partitions went with its first hour
		}
		from, to = pl.dayRange(start)
		bucket = day
	}
	d, marked, err := pl.marked(ctx, day, from, to, pl.p.Consistent)
	if err != nil || !marked {
		return nil, err
	}
	if !d.Sched[0].Copied() {
		pl.readTable(day)
		return tableKeys(pl.stream, day, d.Sched.MaxShards()), nil
	}
	pks := make([]partKey, 0, d.Sched.MaxGSIShards())
	for g := range d.Sched.MaxGSIShards() {
		pks = append(pks, partKey{pk: bucketing.GSIPK(pl.p.Source, bucket, g)})
	}
	return pks, nil
}

// dayWide says whether the GSI path reads d's day as one bucket: a GSI
// day bucket, or a day without GSI copies, read from the table.
func dayWide(d shardmap.Day) bool {
	return d.Sched[0].DayBucket || !d.Sched[0].Copied()
}

// tableKeys are the partition keys of s's n table shards of day.
func tableKeys(s bucketing.Stream, day string, n int) []partKey {
	pks := make([]partKey, 0, n)
	for i := range n {
		pks = append(pks, partKey{pk: s.PK(day, i), table: true})
	}
	return pks
}

func (gsi) adapt(in *dynamodb.QueryInput, pk partKey) {
	if pk.table {
		return // eventually consistent, as the GSI is
	}
	in.IndexName = aws.String(schema.GSIName)
	in.ExpressionAttributeNames["#pk"] = schema.GSIPK
}

// scatter reads the base table, one day bucket at a time, each held by
// every shard the day's shard record names; a day whose hour index lists
// no hour of the page's range is skipped. Consistent, its reads are
// strongly consistent, shard records included: a page sees every write
// acknowledged before it began. Otherwise (chosen by cost, see planner.go)
// it reads as the GSI path does, at half the read capacity.
type scatter struct{ consistent bool }

func (scatter) name() string        { return PathScatter }
func (scatter) step() time.Duration { return 24 * time.Hour }
func (scatter) lean() bool          { return false }

func (sc scatter) partitions(ctx context.Context, pl *planner, start time.Time) ([]partKey, error) {
	day := bucketing.Day(start)
	from, to := pl.dayRange(start)
	d, marked, err := pl.marked(ctx, day, from, to, sc.consistent)
	if err != nil || !marked {
		return nil, err
	}
	return tableKeys(pl.stream, day, d.Sched.MaxShards()), nil
}

func (sc scatter) adapt(in *dynamodb.QueryInput, _ partKey) {
	if sc.consistent {
		in.ConsistentRead = aws.Bool(true)
	}
}

// anyMarked says whether d may hold events in [from, to), which lies
// within d's day.
func anyMarked(d shardmap.Day, from, to time.Time) bool {
	for t := from.Truncate(time.Hour); t.Before(to); t = t.Add(time.Hour) {
		if d.Marked(t.UTC().Hour()) {
			return true
		}
	}
	return false
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
