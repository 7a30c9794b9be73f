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

// Budget returns a context whose deadline is the invocation's less a margin
// for answering: a tenth of the time left, between 50 ms and one second.
// Without a deadline the work gets Default.
func Budget(ctx context.Context) (context.Context, context.CancelFunc) {
	dl, ok := ctx.Deadline()
	if !ok {
		return context.WithTimeout(ctx, Default)
	}
	margin := min(max(time.Until(dl)/10, 50*time.Millisecond), time.Second)
	return context.WithDeadline(ctx, dl.Add(-margin))
}
