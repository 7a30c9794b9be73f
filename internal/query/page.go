package query

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/shardline/shardline/pkg/bucketing"
)

// row is an item on its way to a page.
type row struct {
	item map[string]types.AttributeValue
	sk   string // its sort key, (time, id)
	size int    // the bytes it adds to the answer; 0 while its event is still to be fetched
	gone bool   // its event expired between the index read and the fetch
}

// collector gathers a page's rows: up to the limit and one more, which
// proves another page exists; or, sooner, until their bytes pass the
// budget, when the row that passed it is that proof. reached is the sort
// key up to which, in the page's order, the range has been read: every
// event up to it is in rows or did not pass the filters. A page stopped
// by its deadline continues from there (stop.go).
type collector struct {
	rows    []row
	limit   int
	budget  int
	bytes   int
	asc     bool
	reached string
}

func (c *collector) add(r row) {
	c.rows = append(c.rows, r)
	c.bytes += r.size
	c.reach(r.sk)
}

// reach records that the range was read up to sk, if that is further.
func (c *collector) reach(sk string) {
	if c.reached == "" || (c.asc && sk > c.reached) || (!c.asc && sk < c.reached) {
		c.reached = sk
	}
}

// full: the page has all it can hold, and the proof of more.
func (c *collector) full() bool {
	return len(c.rows) > c.limit || (len(c.rows) > 1 && c.bytes > c.budget)
}

// need is how many more rows the page can use.
func (c *collector) need() int { return c.limit + 1 - len(c.rows) }

// pageReader reads one page of a range on one path, as its planner
// planned it: it opens the path's buckets in order (window.go), merges
// their partitions (segment.go), fills what a lean GSI left out (fill.go),
// and cuts the page to its limit and its payload budget.
type pageReader struct {
	kind Kind
	p    *Params
	via  path
	b    bounds
	plan *planner
	reqs *requests
}

// page reads the page on its path. A page its deadline stops early holds
// the events found so far, and its cursor continues where the reading
// stopped (stop.go): only a page that got nowhere is an error.
func (pr *pageReader) page(ctx context.Context, reason string) (Page, error) {
	p := pr.p
	rows, reached, err := pr.collect(ctx)
	if err == nil && pr.via.lean() {
		rows, reached, err = pr.fillInTime(ctx, rows, reached)
	}
	if err != nil {
		return pr.result(nil, reason), failed(ctx, err)
	}
	rows, more := cut(rows, p.Limit, PageBytes)
	var items []map[string]types.AttributeValue
	for _, rw := range rows {
		if !rw.gone {
			items = append(items, rw.item)
		}
	}
	pg := pr.result(items, reason)
	switch {
	case more:
		pg.Next, err = pr.cursorAfter(rows[len(rows)-1].sk)
	case reached != "":
		pg.Next, err = pr.cursorAfter(reached)
		pg.Stopped = true
	}
	if err != nil {
		return pr.result(nil, reason), err
	}
	return pg, nil
}

// collect merges the range's segments, in order, into the page's rows.
// Stopped by the read deadline, it returns the rows so far and the sort
// key it reached; reached is "" when the page was read to its end.
func (pr *pageReader) collect(ctx context.Context) (rows []row, reached string, err error) {
	pg := &collector{limit: pr.p.Limit, budget: PageBytes, asc: pr.p.Order == Asc}
	rctx, cancel := readBudget(ctx, pr.via.lean())
	defer cancel()
	w := newWindow(rctx, pr, buckets(pr.b.from, pr.b.to, pr.via.step(), pr.p.Order))
	defer w.close()
	for !pg.full() {
		seg, err := w.next(pg.need())
		if err == nil && seg == nil {
			break
		}
		if err == nil {
			err = pr.merge(rctx, seg, pg)
		}
		if err != nil {
			return pr.stop(rctx, seg, pg, err)
		}
		pr.passed(seg, pg)
	}
	return pg.rows, "", nil
}

// cut ends the page: the longest run of rows, at most limit, whose bytes
// fit the budget, and at least one. more says rows remain after it.
func cut(rows []row, limit, budget int) (page []row, more bool) {
	n, bytes := 0, 0
	for n < len(rows) && n < limit {
		if n > 0 && bytes+rows[n].size > budget {
			break
		}
		bytes += rows[n].size
		n++
	}
	return rows[:n], n < len(rows)
}

// cursorAfter is the cursor of the page that follows the sort key sk: a
// row's, or where a stopped page's reading reached. It comes from the
// index's own keys, so it stays right even if the row's event expired
// before it could be fetched.
func (pr *pageReader) cursorAfter(sk string) (*Cursor, error) {
	t, id, err := bucketing.ParseSortKey(sk)
	if err != nil {
		return nil, fmt.Errorf("query: stored sort key %q: %w", sk, err)
	}
	return next(pr.kind, pr.p, t, id), nil
}

// result is the page of items, with the plan of every request the page
// (its planner's included) made so far.
func (pr *pageReader) result(items []map[string]types.AttributeValue, reason string) Page {
	n, rcu := pr.reqs.total()
	if k := pr.plan.readTableDays(); k > 0 && pr.via.name() == PathGSI {
		reason += fmt.Sprintf(reasonSomeTable, k)
	}
	return Page{Items: items, Plan: Plan{Path: pr.via.name(), Reason: reason, Requests: n, ConsumedRCU: rcu}}
}

// failed says whether err is the deadline's: then the caller answers that
// the page could not be read in time.
func failed(ctx context.Context, err error) error {
	if ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%w: %v", ErrDeadline, err)
	}
	return err
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
