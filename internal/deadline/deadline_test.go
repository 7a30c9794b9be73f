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

// TestWithin: an invocation with far more time than API Gateway waits gets
// at most what it is given; one with less keeps Budget's margin.
func TestWithin(t *testing.T) {
	parent, cancel := context.WithTimeout(context.Background(), 59*time.Second)
	defer cancel()
	before := time.Now()
	ctx, cancel2 := Within(parent, API)
	defer cancel2()
	if dl, _ := ctx.Deadline(); dl.Before(before.Add(API)) || dl.After(time.Now().Add(API)) {
		t.Errorf("with 59s left and %v given: deadline %v from now", API, time.Until(dl))
	}

	short, cancel3 := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel3()
	pdl, _ := short.Deadline()
	ctx, cancel4 := Within(short, API)
	defer cancel4()
	if dl, _ := ctx.Deadline(); pdl.Sub(dl) < 295*time.Millisecond || pdl.Sub(dl) > 305*time.Millisecond {
		t.Errorf("with 3s left: deadline %v before the invocation's, want 300ms", pdl.Sub(dl))
	}

	ctx, cancel5 := Within(context.Background(), API)
	defer cancel5()
	if dl, ok := ctx.Deadline(); !ok || time.Until(dl) > API {
		t.Errorf("no deadline given: %v %v", dl, ok)
	}
}

func TestAPILeft(t *testing.T) {
	if API+MaxInit/10 >= APILimit {
		t.Fatalf("API = %v leaves too little under API Gateway's %v", API, APILimit)
	}
	for age, want := range map[time.Duration]time.Duration{
		0:                API,
		3 * time.Second:  API - 3*time.Second, // a cold start used 3 s of API Gateway's wait
		-time.Second:     API,                 // clocks apart
		MaxInit:          API,                 // no cold start takes this long: a replayed request
		30 * time.Second: API,
		time.Hour:        API,
	} {
		if got := APILeft(API, age); got != want {
			t.Errorf("APILeft(%v, %v) = %v, want %v", API, age, got, want)
		}
	}
}
