package query

import (
	"context"
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

// stream is what the run reads: the source's events, or the quarantine.
func (rn *run) stream() bucketing.Stream {
	if rn.kind == Quarantine {
		return bucketing.Stream{Space: bucketing.Quarantine}
	}
	return bucketing.Stream{Space: bucketing.Events, Source: rn.p.Source}
}
