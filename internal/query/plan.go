package query

import (
	"context"
	"fmt"
	"time"

	"github.com/shardline/shardline/internal/ddberr"
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
)

// Events reads one page of p.Source's events. A consistent page comes from
// the base table's shards; any other from the path that costs fewer
// requests (cost.go), and from the base table when the GSI cannot serve.
func (r *Reader) Events(ctx context.Context, p Params) (Page, error) {
	r.init()
	if p.Consistent {
		// The estimate's reads are the ones the page needs anyway; they
		// let it open no more days ahead than their hints say it needs.
		rn := r.newRun(Events, &p, scatter{consistent: true})
		if _, err := rn.estimateCost(ctx); err != nil {
			return rn.result(nil, reasonConsistent), rn.fail(ctx, err)
		}
		return rn.page(ctx, reasonConsistent)
	}
	rn := r.newRun(Events, &p, gsi{})
	via, reason, err := rn.choose(ctx)
	if err != nil {
		if !ddberr.IndexUnavailable(err) {
			return rn.result(nil, reasonGSI), rn.fail(ctx, err)
		}
		via, reason = gsi{}, reasonGSI // the fallback below reads the base table
	}
	rn.via = via
	pg, err := rn.page(ctx, reason)
	if err == nil || !ddberr.IndexUnavailable(err) || via.name() != PathGSI {
		return pg, err
	}
	fb, err := r.newRun(Events, &p, scatter{}).page(ctx, fmt.Sprintf(reasonFallback, ddberr.Code(err)))
	fb.Plan.Requests += pg.Plan.Requests
	fb.Plan.ConsumedRCU += pg.Plan.ConsumedRCU
	return fb, err
}

// Quarantine reads one page of the quarantine, by time received.
func (r *Reader) Quarantine(ctx context.Context, p Params) (Page, error) {
	r.init()
	return r.newRun(Quarantine, &p, scatter{consistent: true}).page(ctx, reasonQuarantine)
}

// bounds is what a page of p reads: the part of the range after the
// cursor, as a span of time and as sort-key bounds.
type bounds struct {
	from, to time.Time // the span: from inclusive, to exclusive
	lo, hi   string    // sort key bounds, inclusive
	skip     string    // the sort key of the cursor's event, already returned
}

// boundsOf is the whole range on a first page; after a cursor, the part
// from the cursor's event on (asc) or back (desc). The cursor's event is
// inside the key bounds, so that the page starts at it exactly whatever
// else shares its time, and is skipped.
func boundsOf(p *Params) bounds {
	b := bounds{from: p.From, to: p.To, lo: bucketing.FormatTime(p.From)}
	b.hi = bucketing.FormatTime(p.To.Add(-time.Nanosecond)) + "$" // above every key of the last instant
	if c := p.Cursor; c != nil {
		b.skip = bucketing.SortKey(c.Time, c.ID)
		if p.Order == Asc {
			b.lo, b.from = b.skip, c.Time
		} else {
			b.hi, b.to = b.skip, c.Time.Add(time.Nanosecond)
		}
	}
	return b
}

// buckets lists the starts of the step-long buckets that overlap [from, to),
// in the order o reads them.
func buckets(from, to time.Time, step time.Duration, o Order) []time.Time {
	var out []time.Time
	for t := from.Truncate(step); t.Before(to); t = t.Add(step) {
		out = append(out, t)
	}
	if o == Desc {
		for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
			out[i], out[j] = out[j], out[i]
		}
	}
	return out
}
