package sourcecounter

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/aws/aws-lambda-go/events"

	"github.com/shardline/shardline/internal/counts"
	"github.com/shardline/shardline/ops/plural"
)

// AmbiguousError names the counter items of a given-up batch for which it
// cannot be told what was counted: the batch has no note of its last
// attempt (it could not be written), and later batches have moved the
// items' watermarks past it. Nothing was counted for them.
type AmbiguousError struct {
	Shard string
	Items []string // "source slice", the item's sort key
}

func (e *AmbiguousError) Error() string {
	return fmt.Sprintf("stream shard %s: for %d counter %s (%s) it cannot be told which of the batch's events were counted before Lambda gave up on it: "+
		"the batch has no note of its last attempt and later batches have counted past it; those events are left uncounted (docs/counts.md, \"Batches given up on\")",
		e.Shard, len(e.Items), plural.Of(len(e.Items), "item", "items"), strings.Join(e.Items, ", "))
}

// Redrive counts the events of a batch of stream shard shardID that Lambda
// gave up on and that were not counted: exactly once, however often it
// runs, whatever the batch's own attempts counted before Lambda gave up.
//
// Which records are missing comes from the note the batch's last failed
// attempt wrote (NoteFailure). Without one, an item's watermark tells as
// long as no later batch has moved it past the batch; otherwise the item is
// ambiguous (*AmbiguousError) and left. The missing records are counted
// under a watermark of their own, named after the batch, so that a redrive
// run again (interrupted, or its object not deleted) adds nothing twice.
func (c *Counter) Redrive(ctx context.Context, shardID string, recs []events.DynamoDBEventRecord) (counts.RedriveStats, error) {
	st := counts.RedriveStats{Records: len(recs)}
	parsed, skipped, err := parse(recs)
	st.Skipped = skipped
	if err != nil || len(parsed) == 0 {
		return st, err
	}
	first, end, err := bounds(recs)
	if err != nil {
		return st, err
	}
	n, err := c.readNote(ctx, shardID, first)
	if err != nil {
		return st, err
	}
	if n != nil && seqLess(n.end, end) {
		n = nil // the note is of an attempt with fewer records: it does not cover the batch
	}
	redriveShard := "redrive/" + shardID + "/" + first
	groups := group(parsed)
	missing, ambiguous, err := c.missing(ctx, groups, n, shortID(shardID, shardIDBytes), shortID(redriveShard, shardIDBytes), end)
	if err != nil {
		return st, err
	}
	todo := make([]events.DynamoDBEventRecord, 0, len(recs))
	want := map[string]bool{}
	for i, g := range groups {
		for _, r := range missing[i] {
			want[r.seq] = true
		}
		st.Already += len(g.recs) - len(missing[i])
	}
	for _, r := range recs {
		if seq, err := counts.CanonicalSeq(r.Change.SequenceNumber); err == nil && want[seq] {
			todo = append(todo, r)
		}
	}
	if len(todo) > 0 {
		applied, err := c.Apply(ctx, redriveShard, todo)
		st.Counted = applied.Counted
		st.Already += applied.Seen
		if err != nil {
			return st, err
		}
	}
	if len(ambiguous) > 0 {
		return st, &AmbiguousError{Shard: shardID, Items: ambiguous}
	}
	return st, nil
}

// missing says, for each of groups (a given-up batch's records by counter
// item), which records were not counted (decide), reading each item's
// watermarks of shard sid and of the batch's redrive, rsid; and names the
// items for which that cannot be told.
func (c *Counter) missing(ctx context.Context, groups []itemGroup, n *note, sid, rsid, end string) ([][]record, []string, error) {
	missing := make([][]record, len(groups))
	errs := make([]error, len(groups))
	var (
		mu        sync.Mutex
		ambiguous []string
	)
	c.each(len(groups), func(i int) {
		g := groups[i]
		marks, err := c.readMarks(ctx, g.source, g.slice, sid, rsid)
		if err != nil {
			errs[i] = err
			return
		}
		recs, ok := decide(g, n, marks[sid], marks[rsid], end)
		if !ok {
			mu.Lock()
			ambiguous = append(ambiguous, g.source+" "+g.slice)
			mu.Unlock()
			return
		}
		missing[i] = recs
	})
	for _, err := range errs {
		if err != nil {
			return nil, nil, err
		}
	}
	return missing, ambiguous, nil
}

// decide says which of g's records are not counted, from, in this order:
// the batch's own redrive watermark (an earlier redrive decided, and
// counted up to it), the note of the batch's last attempt, and the item's
// watermark while it has not passed the batch's end. ok is false when none
// of them can tell.
func decide(g itemGroup, n *note, live, redriven *string, end string) (missing []record, ok bool) {
	if redriven != nil {
		return above(g.recs, *redriven), true
	}
	if n != nil {
		p, listed := n.items[[2]string{g.source, g.slice}]
		switch {
		case !listed:
			return nil, true // brought up to the batch by its attempts
		case !p.unknown && p.mark == nil:
			return g.recs, true
		case !p.unknown:
			return above(g.recs, *p.mark), true
		}
	}
	switch {
	case live == nil || seqLess(*live, g.recs[0].seq):
		return g.recs, true
	case !seqLess(end, *live):
		return above(g.recs, *live), true // no later batch has counted in this item
	}
	return nil, false
}
