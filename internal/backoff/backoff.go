// Package backoff spaces the retries of a call that failed for a reason that
// may pass (throttling, an unavailable service): capped exponential waits
// with full jitter, and a sleep that ends with its context.
package backoff

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"
)

// Policy is capped exponential back-off with full jitter: the wait before
// retry n (from 1) is drawn uniformly from [0, min(Max, Base·2^(n-1))).
type Policy struct {
	Base, Max time.Duration
}

// Ceiling is the longest wait before retry n (from 1).
func (p Policy) Ceiling(n int) time.Duration {
	d := p.Base
	for i := 1; i < n && d < p.Max; i++ {
		d *= 2
	}
	return min(d, p.Max)
}

// Wait is a wait before retry n (from 1), drawn from [0, Ceiling(n)).
func (p Policy) Wait(n int) time.Duration {
	d := p.Ceiling(n)
	if d <= 0 {
		return 0
	}
	return rand.N(d)
}

// Sleep waits d, or less if ctx ends first; it returns ctx's error then,
// nil otherwise. A loop that checks ctx itself may ignore the answer.
func Sleep(ctx context.Context, d time.Duration) error {
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

// ErrDeadline is SleepWithin's answer to a wait that would outlast its
// context's deadline.
var ErrDeadline = errors.New("deadline reached")

// SleepWithin is Sleep, but it refuses at once, with ErrDeadline, a wait
// that would outlast ctx's deadline: a caller with work it cannot finish
// in time reports it now rather than at the deadline.
func SleepWithin(ctx context.Context, d time.Duration) error {
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < d {
		return ErrDeadline
	}
	return Sleep(ctx, d)
}
