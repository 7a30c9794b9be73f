package producer

import (
	"context"
	"math/rand/v2"
	"time"
)

// backoff is capped exponential back-off with full jitter: the wait before
// retry n (from 1) is drawn uniformly from [0, min(max, base·2^(n-1))).
type backoff struct {
	base, max time.Duration
}

func (b backoff) wait(n int) time.Duration {
	d := b.base
	for i := 1; i < n && d < b.max; i++ {
		d *= 2
	}
	d = min(d, b.max)
	if d <= 0 {
		return 0
	}
	return rand.N(d)
}

// sleep waits d or until ctx is done.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
