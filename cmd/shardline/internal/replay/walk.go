package replay

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/shardline/shardline/internal/query"
)

// PageSize is how many quarantined records a replay reads, checks and
// stores at a time.
const PageSize = 100

// Range is the records to walk: received in [From, To), and whose reason
// begins with Reason (every record when it is empty).
type Range struct {
	From, To time.Time
	Reason   string
}

// Check says what is wrong with the range, or nil.
func (rg Range) Check() error {
	if rg.From.IsZero() {
		return fmt.Errorf("from is required")
	}
	if !rg.From.Before(rg.To) {
		return fmt.Errorf("from %s is not before to %s", rg.From.Format(time.RFC3339Nano), rg.To.Format(time.RFC3339Nano))
	}
	return nil
}

// page is one page of the walk: the records that match, and how many the
// reason left out.
type page struct {
	records  []Record
	filtered int
	last     time.Time // received time of the last record read
}

// walker reads the quarantine a page at a time through the query
// function's own reader: strongly consistent reads of every quarantine
// shard of each day, merged in the order received.
type walker struct {
	reader *query.Reader
	rg     Range
	p      query.Params
	done   bool
}

func newWalker(client query.Client, table string, rg Range, size int) *walker {
	return &walker{
		reader: &query.Reader{Client: client, Table: table},
		rg:     rg,
		p:      query.Params{From: rg.From.UTC(), To: rg.To.UTC(), Limit: size, Order: query.Asc},
	}
}

// next reads the next page; ok is false past the last.
func (w *walker) next(ctx context.Context) (pg page, ok bool, err error) {
	if w.done {
		return pg, false, nil
	}
	res, err := w.reader.Quarantine(ctx, w.p)
	if err != nil {
		return pg, false, fmt.Errorf("read the quarantine of table %s: %w", w.reader.Table, err)
	}
	for _, it := range res.Items {
		rec, err := decode(it)
		if err != nil {
			return pg, false, err
		}
		pg.last = rec.ReceivedAt
		if !strings.HasPrefix(rec.Reason, w.rg.Reason) {
			pg.filtered++
			continue
		}
		pg.records = append(pg.records, rec)
	}
	w.p.Cursor = res.Next
	w.done = res.Next == nil
	return pg, true, nil
}

// Walk calls fn with every quarantined record of rg, in the order received.
// It stops at fn's first error, and returns it.
func Walk(ctx context.Context, client query.Client, table string, rg Range, fn func(Record) error) error {
	if err := rg.Check(); err != nil {
		return err
	}
	w := newWalker(client, table, rg, PageSize)
	for {
		pg, ok, err := w.next(ctx)
		if err != nil || !ok {
			return err
		}
		for _, rec := range pg.records {
			if err := fn(rec); err != nil {
				return err
			}
		}
	}
}
