package query

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/shardline/shardline/internal/batchget"
	"github.com/shardline/shardline/internal/shardmap"
	"github.com/shardline/shardline/pkg/bucketing"
)

// Why a path serves a page, as the plan says it.
const (
	reasonConsistent  = "consistent=true: strongly consistent reads come from the base table's shards"
	reasonGSI         = "the GSI serves eventually consistent reads, one time bucket at a time"
	reasonCostGSI     = "cost: the GSI, about %d time buckets in %d queries, against %d days in %d queries on the base table's shards"
	reasonCostScatter = "cost: the base table's shards, %d days in %d queries, against about %d time buckets in %d queries on the GSI"
	reasonForced      = "the reader is set to read the base table's shards"
	reasonFallback    = "the GSI could not serve (%s): read the base table's shards instead"
	reasonQuarantine  = "the quarantine is read from the base table's shards"
	// The days of a page without GSI copies (GSI_COPIES=where-it-pays) are
	// read from the base table's shards on every path.
	reasonNoCopies       = "the range's days have no GSI copies (GSI_COPIES=where-it-pays): the base table's shards hold their events"
	reasonNoCopiesForced = "the GSI path was asked for, but the range's days have no GSI copies (GSI_COPIES=where-it-pays): read from the base table's shards"
	reasonSomeTable      = "; %d of the days read have no GSI copies (GSI_COPIES=where-it-pays) and were read from the base table's shards"
)

// planner plans one page: it reads what the range's days hold (their
// shard records and hour indexes, days.go), estimates what the page would
// cost on each path, and chooses the path. The paths then ask it which
// partitions hold each bucket, and the page's window asks it how many
// events a bucket holds at least, so that each day is read once per page.
type planner struct {
	p      *Params
	b      bounds
	stream bucketing.Stream
	forced string // Reader.Path: a path every eventually consistent page takes
	reqs   *requests
	cache  *dayCache        // the container's, shared by its pages
	now    func() time.Time // of the cache's entries
	memo   dayMemo          // the days this page has read

	tableMu   sync.Mutex
	tableDays map[string]bool // days the GSI path read from the table: they have no GSI copies
}

// readTable records that the GSI path read day from the table's shards.
func (pl *planner) readTable(day string) {
	pl.tableMu.Lock()
	defer pl.tableMu.Unlock()
	if pl.tableDays == nil {
		pl.tableDays = map[string]bool{}
	}
	pl.tableDays[day] = true
}

// readTableDays is how many days the GSI path read from the table.
func (pl *planner) readTableDays() int {
	pl.tableMu.Lock()
	defer pl.tableMu.Unlock()
	return len(pl.tableDays)
}

// newPlanner plans a page of p, making its requests through reqs.
func newPlanner(r *Reader, kind Kind, p *Params, reqs *requests) *planner {
	return &planner{
		p: p, b: boundsOf(p), stream: streamOf(kind, p), forced: r.Path,
		reqs: reqs, cache: &r.days, now: r.Now,
		memo: dayMemo{days: map[string]shardmap.Day{}, fresh: map[string]bool{}, busy: map[string]chan struct{}{}},
	}
}

// streamOf is what a page of kind reads: the source's events, or the
// quarantine.
func streamOf(kind Kind, p *Params) bucketing.Stream {
	if kind == Quarantine {
		return bucketing.Stream{Space: bucketing.Quarantine}
	}
	return bucketing.Stream{Space: bucketing.Events, Source: p.Source}
}

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
	// copied and uncopied count the days of the range the estimate
	// walked whose events have GSI copies, and those whose have none.
	copied, uncopied int
}

// estimate walks the page's range in its order, day by day, and adds up
// the hour indexes' hints until they cover the page (limit and one more)
// or the range ends. Each hour that may hold events costs the GSI path a
// query per GSI shard (each day, on a day whose GSI bucket is the day);
// each day that may hold events costs the scatter path a query per shard.
// The hints are lower bounds, so the estimate errs towards more buckets,
// never fewer. A day without hints (written before they existed) makes the
// estimate unknown: the GSI serves, as it always did.
//
// What it reads of each day is what the page then reads anyway: the paths
// take it from the planner's memo (days.go). It reads the first day on its own (a busy
// source's page needs no other) and the days after it in batches
// (prefetch).
func (pl *planner) estimate(ctx context.Context) (estimate, error) {
	var e estimate
	need := float64(pl.p.Limit + 1)
	got := 0.0
	starts := buckets(pl.b.from, pl.b.to, 24*time.Hour, pl.p.Order)
	ahead := prefetchDays
	for i, dayStart := range starts {
		day := bucketing.Day(dayStart)
		if i > 0 && !pl.known(day, pl.p.Consistent) {
			var err error
			if ahead, err = pl.readAhead(ctx, starts[i:], ahead); err != nil {
				return e, err
			}
		}
		d, err := pl.day(ctx, day, pl.p.Consistent)
		if err != nil {
			return e, err
		}
		if d.Sched == nil {
			continue
		}
		copied := e.count(d)
		from, to := pl.dayRange(dayStart)
		opened := false
		for _, h := range buckets(from, to, time.Hour, pl.p.Order) {
			hint := d.Hint(h.UTC().Hour())
			if hint == 0 {
				continue
			}
			if hint < 0 {
				return estimate{copied: e.copied, uncopied: e.uncopied}, nil
			}
			if !opened || !dayWide(d) {
				// a day without copies is read from its table
				// shards on the GSI path too
				e.buckets++
				if copied {
					e.gsi += d.Sched.MaxGSIShards()
				} else {
					e.gsi += d.Sched.MaxShards()
				}
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

// readAhead reads, once the first day did not cover the page, the days
// that start starts, ahead of them at once; the next time the page gets
// this far, twice as many.
func (pl *planner) readAhead(ctx context.Context, starts []time.Time, ahead int) (int, error) {
	var next []string
	for _, t := range starts[:min(ahead, len(starts))] {
		next = append(next, bucketing.Day(t))
	}
	if err := pl.prefetch(ctx, next, pl.p.Consistent); err != nil {
		return ahead, err
	}
	return min(2*ahead, batchget.MaxKeys/2), nil
}

// count counts d among the days with GSI copies or without, and says
// which it is.
func (e *estimate) count(d shardmap.Day) bool {
	copied := d.Sched[0].Copied()
	if copied {
		e.copied++
	} else {
		e.uncopied++
	}
	return copied
}

// choose is the path an eventually consistent page of events takes, and
// why: the GSI unless the base table's shards cost fewer requests.
func (pl *planner) choose(ctx context.Context) (path, string, error) {
	// The estimate's reads are the ones the page needs anyway, whatever
	// path serves it; they let it open no more buckets ahead than their
	// hints say it needs.
	e, err := pl.estimate(ctx)
	if err != nil {
		return nil, "", err
	}
	if pl.forced == PathScatter {
		return scatter{}, reasonForced, nil
	}
	if e.uncopied > 0 && e.copied == 0 {
		// Every day the page reads is on the table alone: the GSI path
		// would read the same shards, so the page says so plainly.
		if pl.forced == PathGSI {
			return scatter{}, reasonNoCopiesForced, nil
		}
		return scatter{}, reasonNoCopies, nil
	}
	if pl.forced == PathGSI {
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
