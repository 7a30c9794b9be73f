package query

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/shardline/shardline/pkg/bucketing"
)

// path is a way to read a range: the GSI (gsi.go) or the base table's
// shards (scatter.go). A page reads the path's buckets in order; each
// bucket is held by a few partitions, which the path names.
type path interface {
	// name is the path's name in the plan.
	name() string
	// step is the length of the path's buckets.
	step() time.Duration
	// partitions lists the partition keys that hold the bucket starting at
	// start.
	partitions(ctx context.Context, rn *run, start time.Time) ([]string, error)
	// adapt sets what the path's queries need besides the key condition:
	// the index, the read consistency.
	adapt(in *dynamodb.QueryInput)
	// lean: the path's items may come without their event, which fill then
	// fetches from the table.
	lean() bool
}

// lookup is one of the registry's ways to read a shard record: it returns
// the schedule, and whether it made a request for it.
type lookup func(context.Context, bucketing.Stream, string) (bucketing.Schedule, bool, error)

// schedule reads the shard record of the run's stream on day, with read,
// as one of the page's requests.
func (rn *run) schedule(ctx context.Context, day string, read lookup) (bucketing.Schedule, error) {
	if err := rn.acquire(ctx); err != nil {
		return nil, err
	}
	defer rn.release()
	sched, requested, err := read(ctx, rn.stream(), day)
	if requested {
		rn.count(1, 0.5) // a strongly consistent read of a small item
	}
	if err != nil {
		return nil, fmt.Errorf("shard record for %s: %w", day, err)
	}
	return sched, nil
}

// stream is what the run reads: the source's events, or the quarantine.
func (rn *run) stream() bucketing.Stream {
	if rn.kind == Quarantine {
		return bucketing.Stream{Space: bucketing.Quarantine}
	}
	return bucketing.Stream{Space: bucketing.Events, Source: rn.p.Source}
}
