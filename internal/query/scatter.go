package query

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/shardline/shardline/internal/shardmap"
	"github.com/shardline/shardline/pkg/bucketing"
)

// scatter reads the base table, one day bucket at a time, each held by
// every shard the day's shard record names; a day whose hour index lists
// no hour of the page's range is skipped. Consistent, its reads are
// strongly consistent, shard records included: a page sees every write
// acknowledged before it began. Otherwise (chosen by cost, see cost.go)
// it reads as the GSI path does, at half the read capacity.
type scatter struct{ consistent bool }

func (scatter) name() string        { return PathScatter }
func (scatter) step() time.Duration { return 24 * time.Hour }
func (scatter) lean() bool          { return false }

func (sc scatter) partitions(ctx context.Context, rn *run, start time.Time) ([]string, error) {
	day := bucketing.Day(start)
	from, to := rn.dayRange(start)
	d, marked, err := rn.marked(ctx, day, from, to, sc.consistent)
	if err != nil || !marked {
		return nil, err
	}
	s := rn.stream()
	pks := make([]string, 0, d.Sched.MaxShards())
	for n := range d.Sched.MaxShards() {
		pks = append(pks, s.PK(day, n))
	}
	return pks, nil
}

func (sc scatter) adapt(in *dynamodb.QueryInput) {
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
