// Package deadline gives a Lambda invocation's work a deadline that leaves
// the function time to answer.
package deadline

import (
	"context"
	"time"
)

// Default bounds work whose context has no deadline, such as a request to the
// local server: API Gateway gives up on an integration after 30 seconds.
const Default = 25 * time.Second

// APILimit is API Gateway's integration timeout: 30 seconds after it
// received a request it answers 503 itself, whatever the function is still
// doing, and the function's answer is lost.
const APILimit = 30 * time.Second

// API bounds the work of an API request, counted from when API Gateway
// received it: 2 seconds under APILimit, for the function to answer and the
// answer to reach API Gateway. A function's timeout is no bound: the ingest
// function also serves Kinesis, with a longer one.
const API = 28 * time.Second

// Budget returns a context whose deadline is the invocation's less a margin
// for answering: a tenth of the time left, between 50 ms and one second.
// Without a deadline the work gets Default.
func Budget(ctx context.Context) (context.Context, context.CancelFunc) {
	dl, ok := ctx.Deadline()
	if !ok {
		return context.WithTimeout(ctx, Default)
	}
	return context.WithDeadline(ctx, dl.Add(-margin(time.Until(dl))))
}

// Within is Budget, but ends no later than left from now.
func Within(ctx context.Context, left time.Duration) (context.Context, context.CancelFunc) {
	end := time.Now().Add(left)
	if dl, ok := ctx.Deadline(); ok {
		end = earliest(end, dl.Add(-margin(time.Until(dl))))
	}
	return context.WithDeadline(ctx, end)
}

// MaxInit bounds the time between API Gateway receiving a request and the
// handler starting on it: API Gateway invokes the function synchronously,
// and what can come between is the function's init phase (a cold start),
// which Lambda stops at 10 seconds.
const MaxInit = 10 * time.Second

// APILeft is what is left of budget for a request that API Gateway received
// age ago: a cold start spends API Gateway's time too. An age outside [0,
// MaxInit) is not a cold start — clocks apart, or a request replayed from a
// file — and counts as 0.
func APILeft(budget, age time.Duration) time.Duration {
	if age < 0 || age >= MaxInit {
		return budget
	}
	return budget - age
}

func margin(left time.Duration) time.Duration {
	return min(max(left/10, 50*time.Millisecond), time.Second)
}

func earliest(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}
