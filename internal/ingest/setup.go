package ingest

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// setupShare is the share of an invocation's time left that a batch's
// first-of-day setup may take (catalogue entries, hour marks, shard
// records: schedules). What is set up within it is written in the rest;
// what is not is left failed, and reported, rather than the setup taking
// all the time and the batch storing nothing (issue 28, item 9). A setup
// cut short resumes on the next delivery where it stopped: the handler
// remembers what it finished (shardmap.Registry, shardmap.Hours).
const setupShare = 0.5

// setUp is schedules within setupShare of ctx's time left. A (stream,
// day) whose schedule this handler already holds resolves at once, even
// once that share is spent.
func (h *Handler) setUp(ctx context.Context, keys []schedKey, hours [][24]int32) []resolved {
	dl, ok := ctx.Deadline()
	if !ok {
		return h.schedules(ctx, keys, hours)
	}
	end := time.Now().Add(time.Duration(float64(time.Until(dl)) * setupShare))
	sctx, cancel := context.WithDeadline(ctx, end)
	defer cancel()
	res := h.schedules(sctx, keys, hours)
	if ctx.Err() == nil {
		for i := range res {
			if errors.Is(res[i].err, context.DeadlineExceeded) {
				res[i].err = fmt.Errorf("first-of-day setup did not finish in its share of the time (%.0f%%); it resumes on the next delivery: %w",
					setupShare*100, res[i].err)
			}
		}
	}
	return res
}
