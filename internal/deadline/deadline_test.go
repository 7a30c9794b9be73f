package deadline

import (
	"context"
	"testing"
	"time"
)

func TestBudget(t *testing.T) {
	cases := []struct{ left, margin time.Duration }{
		{200 * time.Millisecond, 50 * time.Millisecond},
		{3 * time.Second, 300 * time.Millisecond},
		{60 * time.Second, time.Second},
	}
	for _, c := range cases {
		parent, cancel := context.WithTimeout(context.Background(), c.left)
		pdl, _ := parent.Deadline()
		ctx, cancel2 := Budget(parent)
		dl, _ := ctx.Deadline()
		if got := pdl.Sub(dl); got < c.margin-5*time.Millisecond || got > c.margin+5*time.Millisecond {
			t.Errorf("with %v left the margin is %v, want %v", c.left, got, c.margin)
		}
		cancel2()
		cancel()
	}
	ctx, cancel := Budget(context.Background())
	defer cancel()
	if dl, ok := ctx.Deadline(); !ok || time.Until(dl) > Default {
		t.Errorf("no deadline given: got %v %v", dl, ok)
	}
}
