package query

import (
	"context"
	"sync"
	"time"
)

// aheadPartitions bounds the partitions one window opens: 16 hours ahead
// for a source with one GSI shard, 2 for a source with eight.
const aheadPartitions = 16

// window hands out a page's segments in order, opening them a few at a
// time, in parallel, before the merge needs them.
//
// The first window opens one segment. Each time the merge comes back for
// more after a segment that had partitions, the range was sparse so far,
// and the next window opens twice as many (a bucket the hour index says is
// empty has none, costs nothing, and says nothing of the range), up to aheadPartitions partitions, but no more than the hour
// indexes' hints (lower bounds of each bucket's events) say the page needs. The first segment of a window is
// asked for all the page can use, split over its partitions; the others,
// opened ahead of need, share half of that, since the page reads them only
// if the first falls short. A partition that runs short is refilled lazily,
// when the merge needs its head. An error in a segment opened ahead is the
// page's only if the page reaches that segment.
type window struct {
	pr     *pageReader
	ctx    context.Context // of the segments opened ahead; canceled by close
	cancel context.CancelFunc
	starts []time.Time // the buckets not yet opened, in order
	opened []*segment  // opened or opening, not yet handed out
	size   int         // segments the next window may open
	grow   bool        // a segment with partitions was handed out since the last window opened
	width  int         // partitions of the last segment handed out that had any
	wg     sync.WaitGroup
}

// newWindow reads the buckets starting at starts, in that order, for pr.
func newWindow(ctx context.Context, pr *pageReader, starts []time.Time) *window {
	ctx, cancel := context.WithCancel(ctx)
	return &window{pr: pr, ctx: ctx, cancel: cancel, starts: starts, size: 1, width: 1}
}

// next is the next segment, open, or nil past the last. n is how many more
// items the page can use. The error is the segment's own.
func (w *window) next(n int) (*segment, error) {
	if len(w.opened) == 0 {
		if len(w.starts) == 0 {
			return nil, nil
		}
		w.openAhead(n)
	}
	seg := w.opened[0]
	w.opened = w.opened[1:]
	<-seg.ready
	if len(seg.parts) > 0 {
		w.width = len(seg.parts)
		w.grow = true
	}
	return seg, seg.err
}

// openAhead starts opening the next window of segments.
func (w *window) openAhead(n int) {
	if w.grow { // the page read a bucket and still needs more: the range is sparse
		w.size = min(2*w.size, aheadPartitions)
		w.grow = false
	}
	k := min(w.size, len(w.starts), max(1, aheadPartitions/w.width))
	// and no more than the hour indexes' hints say the page needs
	var hints []int // of the first buckets, as long as they are known
	for sum := 0; len(hints) < k; {
		h := w.pr.plan.hint(w.starts[len(hints)], w.pr.via.step())
		if h < 0 {
			break
		}
		hints = append(hints, h)
		if sum += h; sum >= n {
			k = len(hints)
			break
		}
	}
	before := 0 // the hints of the buckets before this one
	for i, start := range w.starts[:k] {
		seg := &segment{start: start, ready: make(chan struct{})}
		w.opened = append(w.opened, seg)
		ask := n
		if i > 0 {
			ask = ceilDiv(n, 2*(k-1))
			// A bucket whose hint is known holds at least that many, and
			// the page can use at most what the buckets before it leave:
			// asked for that, a quiet bucket is read in one request.
			if i < len(hints) && hints[i] > 0 {
				ask = max(ask, min(hints[i], n-before)+1)
			}
		}
		if i < len(hints) {
			before += hints[i]
		}
		w.wg.Add(1)
		go func() {
			defer w.wg.Done()
			w.pr.open(w.ctx, seg, ask)
		}()
	}
	w.starts = w.starts[k:]
}

// close stops the segments still opening, and waits for them: the plan
// then counts every request the page made.
func (w *window) close() {
	w.cancel()
	w.wg.Wait()
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }
