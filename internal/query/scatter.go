package query

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/shardline/shardline/pkg/bucketing"
)

// scatter reads the base table, one day bucket at a time, each held by
// every shard the day's shard record names. Its reads are strongly
// consistent, shard records included: a page sees every write acknowledged
// before it began.
type scatter struct{}

func (scatter) name() string        { return PathScatter }
func (scatter) step() time.Duration { return 24 * time.Hour }
func (scatter) lean() bool          { return false }

func (scatter) partitions(ctx context.Context, rn *run, start time.Time) ([]string, error) {
	day := bucketing.Day(start)
	sched, err := rn.schedule(ctx, day, func(ctx context.Context, s bucketing.Stream, day string) (bucketing.Schedule, bool, error) {
		sched, _, err := rn.r.registry.Lookup(ctx, s, day)
		return sched, true, err
	})
	if err != nil || sched == nil {
		return nil, err
	}
	s := rn.stream()
	pks := make([]string, 0, sched.MaxShards())
	for n := range sched.MaxShards() {
		pks = append(pks, s.PK(day, n))
	}
	return pks, nil
}

func (scatter) adapt(in *dynamodb.QueryInput) { in.ConsistentRead = aws.Bool(true) }
