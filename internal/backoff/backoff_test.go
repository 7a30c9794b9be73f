package backoff

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestWaitsDoubleUpToTheCap(t *testing.T) {
	p := Policy{Base: 25 * time.Millisecond, Max: time.Second}
	for n, want := range map[int]time.Duration{1: 25 * time.Millisecond, 2: 50 * time.Millisecond, 6: 800 * time.Millisecond, 7: time.Second, 60: time.Second} {
		if got := p.Ceiling(n); got != want {
			t.Errorf("Ceiling(%d) = %v, want %v", n, got, want)
		}
		for range 100 {
			if w := p.Wait(n); w < 0 || w >= want {
				t.Fatalf("Wait(%d) = %v, outside [0, %v)", n, w, want)
			}
		}
	}
	if w := (Policy{}).Wait(3); w != 0 {
		t.Errorf("zero policy waits %v", w)
	}
}

func TestSleepEndsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Sleep(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Fatalf("Sleep on an ended context = %v, want context.Canceled", err)
	}
	if err := Sleep(context.Background(), time.Millisecond); err != nil {
		t.Fatalf("Sleep = %v", err)
	}
}
