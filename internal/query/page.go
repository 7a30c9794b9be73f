package query

import (
	"context"
	"fmt"

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
// budget, when the row that passed it is that proof.
type collector struct {
	rows   []row
	limit  int
	budget int
	bytes  int
}

func (c *collector) add(r row) {
	c.rows = append(c.rows, r)
	c.bytes += r.size
}

// full: the page has all it can hold, and the proof of more.
func (c *collector) full() bool {
	return len(c.rows) > c.limit || (len(c.rows) > 1 && c.bytes > c.budget)
}

// need is how many more rows the page can use.
func (c *collector) need() int { return c.limit + 1 - len(c.rows) }

// page reads the run's page on its path.
func (rn *run) page(ctx context.Context, reason string) (Page, error) {
	p := rn.p
	rows, err := rn.collect(ctx)
	if err == nil && rn.via.lean() {
		err = rn.fill(ctx, rows[:min(len(rows), p.Limit)])
	}
	if err != nil {
		return rn.result(nil, reason), rn.fail(ctx, err)
	}
	rows, more := cut(rows, p.Limit, PageBytes)
	var items []map[string]types.AttributeValue
	for _, rw := range rows {
		if !rw.gone {
			items = append(items, rw.item)
		}
	}
	pg := rn.result(items, reason)
	if more {
		if pg.Next, err = rn.cursorAfter(rows[len(rows)-1]); err != nil {
			return rn.result(nil, reason), err
		}
	}
	return pg, nil
}

// collect merges the range's segments, in order, into the page's rows.
func (rn *run) collect(ctx context.Context) ([]row, error) {
	pg := &collector{limit: rn.p.Limit, budget: PageBytes}
	w := rn.window(ctx, buckets(rn.b.from, rn.b.to, rn.via.step(), rn.p.Order))
	defer w.close()
	for !pg.full() {
		seg, err := w.next(pg.need())
		if err != nil {
			return nil, err
		}
		if seg == nil {
			break
		}
		if err := rn.merge(ctx, seg, pg); err != nil {
			return nil, err
		}
	}
	return pg.rows, nil
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

// cursorAfter is the cursor of the page that follows rw. It comes from the
// index's own keys, so it stays right even if rw's event expired before it
// could be fetched.
func (rn *run) cursorAfter(rw row) (*Cursor, error) {
	t, id, err := bucketing.ParseSortKey(rw.sk)
	if err != nil {
		return nil, fmt.Errorf("query: stored sort key %q: %w", rw.sk, err)
	}
	return next(rn.kind, rn.p, t, id), nil
}
