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
	d, marked, err := rn.dayMarked(ctx, start, sc.consistent)
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

// dayRange is the part of the page's span on the day of t.
func (rn *run) dayRange(t time.Time) (from, to time.Time) {
	start := t.UTC().Truncate(24 * time.Hour)
	return maxTime(start, rn.b.from), minTime(start.Add(24*time.Hour), rn.b.to)
}

// dayMarked is what the page knows of the day of t, and whether the day
// may hold events in the page's span: from the cache (unless fresh) when
// that says it may, afresh otherwise.
func (rn *run) dayMarked(ctx context.Context, t time.Time, fresh bool) (shardmap.Day, bool, error) {
	day := bucketing.Day(t)
	from, to := rn.dayRange(t)
	d, err := rn.day(ctx, day, fresh)
	if err == nil && (d.Sched == nil || !anyMarked(d, from, to)) {
		d, err = rn.day(ctx, day, true) // what the page knows may be older than a mark
	}
	if err != nil || d.Sched == nil || !anyMarked(d, from, to) {
		return d, false, err
	}
	return d, true, nil
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
