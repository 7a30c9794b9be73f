package benchrun

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/shardline/shardline/internal/catalog"
	"github.com/shardline/shardline/internal/ingest"
	"github.com/shardline/shardline/internal/shardmap"
	"github.com/shardline/shardline/pkg/bucketing"
)

// seedYesterday writes, for every source of w under QuietRate, the shard
// record and hour index of the day before env.start as the real writers
// leave them, straight to DynamoDB Local (not through the ledger: they are
// yesterday's writes, which the model already prices per day and per hour
// for today): the record by a registry of cfg as of yesterday's first
// second, and each hour's mark by shardmap.Hours with the hint the hour's
// first batch gives it, one event. Nothing else of yesterday is written:
// today's first step depends on these two items only (shardmap.Day.Quiet).
func seedYesterday(ctx context.Context, env costEnv, cfg ingest.Config, w CostWorkload) error {
	yesterday := env.start.AddDate(0, 0, -1)
	day := bucketing.Day(yesterday)
	reg := &shardmap.Registry{Client: env.local, Table: env.table, NewDay: catalog.Lister(env.local, env.table), Now: func() time.Time { return yesterday.Add(time.Second) },
		Config: shardmap.Config{Shards: cfg.Shards, GSIShards: cfg.GSIShards, Retention: cfg.Retention, Carry: true, Copies: cfg.GSICopies}}
	hours := &shardmap.Hours{Client: env.local, Table: env.table, Retention: cfg.Retention}
	var marks [24]int32
	for h := range marks {
		marks[h] = 1
	}
	var names []string
	for _, g := range w.Groups {
		if g.Rate < QuietRate {
			for i := range g.Count {
				names = append(names, g.name(i))
			}
		}
	}
	work := make(chan string)
	errs := make(chan error, 32)
	var wg sync.WaitGroup
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for name := range work {
				st := bucketing.Stream{Space: bucketing.Events, Source: name}
				if _, err := reg.Schedule(ctx, st, day); err != nil {
					errs <- fmt.Errorf("cost model: seed %s's previous day: %w", name, err)
					return
				}
				if err := hours.Mark(ctx, st, day, marks); err != nil {
					errs <- fmt.Errorf("cost model: seed %s's previous hours: %w", name, err)
					return
				}
			}
		}()
	}
	var err error
feed:
	for _, n := range names {
		select {
		case work <- n:
		case err = <-errs:
			break feed
		}
	}
	close(work)
	wg.Wait()
	if err == nil {
		select {
		case err = <-errs:
		default:
		}
	}
	return err
}
