package query

import (
	"context"
	"time"

	"github.com/shardline/shardline/internal/schema"
	"github.com/shardline/shardline/pkg/bucketing"
)

// Where a page stops when its deadline comes first. A slow DynamoDB, or a
// filter that passes few of a busy source's events, must not make every
// try of a page read the same part of the range again and answer 503: the
// page answers the events it found, and its cursor continues from the
// furthest key up to which the range was read (the collector's reached).
// Only a page that got nowhere (no event, no key passed) is ErrDeadline.

// readBudget is the part of the page's time its reading may take: all of
// it, but a quarter kept on a lean path for fetching the events (fill.go).
func readBudget(ctx context.Context, lean bool) (context.Context, context.CancelFunc) {
	dl, ok := ctx.Deadline()
	if !ok || !lean {
		return context.WithCancel(ctx)
	}
	return context.WithDeadline(ctx, dl.Add(-time.Until(dl)/4))
}

// stop ends a page whose reading failed with err. Past the read deadline,
// the page is what it holds, and continues from where it reached (seg,
// when the deadline came inside its merge, gives what its partitions
// read); any other error is the page's.
func (pr *pageReader) stop(rctx context.Context, seg *segment, pg *collector, err error) ([]row, string, error) {
	if rctx.Err() == nil {
		return nil, "", err
	}
	if seg != nil && seg.err == nil {
		pr.settle(seg, pg)
	}
	if pg.reached == "" || pg.reached == pr.b.skip {
		return nil, "", err // got nowhere
	}
	return pg.rows, pg.reached, nil
}

// passed records, after seg's merge, that the range was read to seg's
// end, if the page used it all: asc, every key before the next bucket;
// desc, every key from seg's start on. (A day bucket's partitions, which go
// with its first hour, hold more: claiming less is safe.)
func (pr *pageReader) passed(seg *segment, pg *collector) {
	for _, pt := range seg.parts {
		if !pt.done || len(pt.buf) > 0 {
			return
		}
	}
	at := seg.start
	if pg.asc {
		at = at.Add(pr.via.step())
	}
	if pr.b.from.Before(at) && at.Before(pr.b.to) {
		pg.reach(bucketing.SortKey(at, "")) // below every key of its instant
	}
}

// settle moves into the page, in order, the items seg's partitions hold up
// to their frontier, the furthest key up to which all of them were read,
// and records that the range was read to it.
func (pr *pageReader) settle(seg *segment, pg *collector) {
	f, all := pr.frontier(seg)
	if f == "" && !all {
		return
	}
	for !pg.full() {
		pt := pr.head(seg.parts)
		if pt == nil {
			break
		}
		sk := schema.S(pt.buf[0][schema.SK])
		if !all && pr.beyond(sk, f) {
			break
		}
		it := pt.buf[0]
		pt.buf = pt.buf[1:]
		if sk != pr.b.skip {
			pg.add(row{item: it, sk: sk, size: pr.size(it)})
		}
	}
	if f != "" && !pg.full() {
		pg.reach(f)
	}
}

// frontier is the nearest, in the page's order, of the keys the partitions
// of seg still to be read were last read to; "" if one was never read.
// all: every partition was read to its end.
func (pr *pageReader) frontier(seg *segment) (f string, all bool) {
	all = true
	for _, pt := range seg.parts {
		if pt.done {
			continue
		}
		all = false
		last := schema.S(pt.in.ExclusiveStartKey[schema.SK])
		if last == "" {
			return "", false
		}
		if f == "" || pr.beyond(f, last) {
			f = last
		}
	}
	return f, all
}

// beyond: sort key a comes after b in the page's order.
func (pr *pageReader) beyond(a, b string) bool {
	if pr.p.Order == Asc {
		return a > b
	}
	return a < b
}

// fillInTime fetches the events of a lean page's rows (fill.go). Stopped
// by the deadline, the page keeps the rows filled so far, which come
// first, and continues after them.
func (pr *pageReader) fillInTime(ctx context.Context, rows []row, reached string) ([]row, string, error) {
	n, err := pr.fill(ctx, rows[:min(len(rows), pr.p.Limit)])
	if err == nil {
		return rows, reached, nil
	}
	if ctx.Err() == nil || n == 0 {
		return nil, "", err
	}
	return rows[:n], rows[n-1].sk, nil
}
