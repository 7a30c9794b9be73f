package query

import (
	"context"
	"fmt"
	"time"

	"github.com/shardline/shardline/pkg/bucketing"
)

// prefetchDays is how many days the estimate reads at once the first time
// the page needs more than its first day; it doubles each time after.
const prefetchDays = 7

// estimate is what a page would cost on each path: Query requests, counted
// from the days' hour indexes before any event is read.
type estimate struct {
	gsi, scatter int // requests on each path
	buckets      int // GSI buckets the page would open: hours, or days on a day-bucket day
	days         int // base-table day buckets the page would open
	known        bool
}

// estimateCost walks the page's range in its order, day by day, and adds up
// the hour indexes' hints until they cover the page (limit and one more)
// or the range ends. Each hour that may hold events costs the GSI path a
// query per GSI shard (each day, on a day whose GSI bucket is the day);
// each day that may hold events costs the scatter path a query per shard.
// The hints are lower bounds, so the estimate errs towards more buckets,
// never fewer. A day without hints (written before they existed) makes the
// estimate unknown: the GSI serves, as it always did.
//
// What it reads of each day is what the page then reads anyway: the paths
// take it from the page's memo. It reads the first day on its own (a busy
// source's page needs no other) and the days after it in batches
// (prefetch).
func (rn *run) estimateCost(ctx context.Context) (estimate, error) {
	var e estimate
	need := float64(rn.p.Limit + 1)
	got := 0.0
	starts := buckets(rn.b.from, rn.b.to, 24*time.Hour, rn.p.Order)
	ahead := prefetchDays
	for i, dayStart := range starts {
		day := bucketing.Day(dayStart)
		if i > 0 && !rn.known(day, rn.p.Consistent) {
			// The first day did not cover the page: read the next days
			// at once, more each time the page gets this far.
			var next []string
			for _, t := range starts[i:min(i+ahead, len(starts))] {
				next = append(next, bucketing.Day(t))
			}
			if err := rn.prefetch(ctx, next, rn.p.Consistent); err != nil {
				return e, err
			}
			ahead = min(2*ahead, batchGetKeys/2)
		}
		d, err := rn.day(ctx, day, rn.p.Consistent)
		if err != nil {
			return e, err
		}
		if d.Sched == nil {
			continue
		}
		from, to := rn.dayRange(dayStart)
		opened := false
		for _, h := range buckets(from, to, time.Hour, rn.p.Order) {
			hint := d.Hint(h.UTC().Hour())
			if hint == 0 {
				continue
			}
			if hint < 0 {
				return estimate{}, nil
			}
			daily := d.Sched[0].DayBucket
			if !opened || !daily {
				e.buckets++
				e.gsi += d.Sched.MaxGSIShards()
			}
			if !opened {
				opened = true
				e.days++
				e.scatter += d.Sched.MaxShards()
			}
			// a range that covers part of an hour holds about that part of its events
			part := minTime(h.Add(time.Hour), to).Sub(maxTime(h, from)).Hours()
			if got += float64(hint) * part; got >= need {
				e.known = true
				return e, nil
			}
		}
	}
	e.known = true
	return e, nil
}

// choose is the path an eventually consistent page of events takes, and
// why: the GSI unless the base table's shards cost fewer requests.
func (rn *run) choose(ctx context.Context) (path, string, error) {
	// The estimate's reads are the ones the page needs anyway, whatever
	// path serves it; they let it open no more buckets ahead than their
	// hints say it needs.
	e, err := rn.estimateCost(ctx)
	if err != nil {
		return nil, "", err
	}
	if f := rn.r.Path; f != "" {
		if f == PathScatter {
			return scatter{}, reasonForced, nil
		}
		return gsi{}, reasonGSI, nil
	}
	if !e.known {
		return gsi{}, reasonGSI, nil
	}
	if e.scatter < e.gsi {
		return scatter{}, fmt.Sprintf(reasonCostScatter, e.days, e.scatter, e.buckets, e.gsi), nil
	}
	return gsi{}, fmt.Sprintf(reasonCostGSI, e.buckets, e.gsi, e.days, e.scatter), nil
}
