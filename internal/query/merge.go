package query

import (
	"context"

	"github.com/shardline/shardline/internal/schema"
)

// merge moves the segment's items into the page in the page's order, until
// the page is full or the segment is exhausted. The cursor's own event,
// which the key condition includes, is passed over.
func (rn *run) merge(ctx context.Context, seg *segment, pg *collector) error {
	for !pg.full() {
		if err := rn.refill(ctx, seg, pg.need()); err != nil {
			return err
		}
		pt := rn.head(seg.parts)
		if pt == nil {
			return nil
		}
		it := pt.buf[0]
		pt.buf = pt.buf[1:]
		if sk := str(it[schema.SK]); sk != rn.b.skip {
			pg.add(row{item: it, sk: sk, size: rn.size(it)})
		}
	}
	return nil
}

// refill reads on every drained partition of seg until each has an item
// buffered or is exhausted: any of them may hold the next item. (A filter
// can make a partition's page come back empty with more to read.) Each is
// asked for its share of the n items the page can use, split between the
// partitions that still have items to read.
func (rn *run) refill(ctx context.Context, seg *segment, n int) error {
	for {
		live, drained := 0, 0
		for _, pt := range seg.parts {
			if !pt.done {
				live++
			}
			if pt.drained() {
				drained++
			}
		}
		if drained == 0 {
			return nil
		}
		if err := rn.fetch(ctx, seg.parts, share(n, live)); err != nil {
			return err
		}
	}
}

// head is the partition whose next item comes first in the page's order,
// or nil when every partition is exhausted.
func (rn *run) head(parts []*partition) *partition {
	asc := rn.p.Order == Asc
	var best *partition
	var bestSK string
	for _, pt := range parts {
		if len(pt.buf) == 0 {
			continue
		}
		sk := str(pt.buf[0][schema.SK])
		if best == nil || (asc && sk < bestSK) || (!asc && sk > bestSK) {
			best, bestSK = pt, sk
		}
	}
	return best
}
