package simtime

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// server answers its URL after wait of the wall clock, or, if release is
// set, once it is closed, and counts the connections it accepted and the
// requests that arrived.
type server struct {
	*httptest.Server
	conns   atomic.Int64
	arrived chan struct{}
}

func newServer(t *testing.T, wait time.Duration, release chan struct{}) *server {
	s := &server{arrived: make(chan struct{}, 1000)}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.arrived <- struct{}{}
		if release != nil {
			<-release
		}
		time.Sleep(wait)
		io.WriteString(w, s.URL)
	}))
	s.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			s.conns.Add(1)
		}
	}
	s.Start()
	t.Cleanup(s.Close)
	return s
}

func get(ctx context.Context, c *Clock, url string) (string, error) {
	r, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := c.out.Do(r)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

// TestTheClockStandsStillWhileARequestIsUnderWay: a request that takes
// 50 ms of the wall takes none of the simulation's time, and requests one
// after the other reuse one connection.
func TestTheClockStandsStillWhileARequestIsUnderWay(t *testing.T) {
	srv := newServer(t, 50*time.Millisecond, nil)
	start := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	Run(t, start, func(t *testing.T, c *Clock) {
		for i := range 20 {
			before := c.Now()
			if got, err := get(context.Background(), c, srv.URL); err != nil || got != srv.URL {
				t.Fatalf("request %d: %q, %v", i, got, err)
			}
			if d := c.Now().Sub(before); d != 0 {
				t.Fatalf("request %d took %v of the simulation's time, want 0", i, d)
			}
			time.Sleep(time.Second) // the clock runs when nothing is under way
		}
		if got := c.Now().Sub(start); got != 20*time.Second {
			t.Errorf("the clock ran %v, want 20s", got)
		}
	})
	if n := srv.conns.Load(); n != 1 {
		t.Errorf("20 requests one after the other opened %d connections, want 1", n)
	}
}

// TestACancelledRequestReturnsAtOnce: a request cancelled by another
// goroutine of the simulation returns its context's error while the
// server still holds it, and the sender goes on serving requests, whose
// answers are their own.
func TestACancelledRequestReturnsAtOnce(t *testing.T) {
	release := make(chan struct{})
	held := newServer(t, 0, release)
	quick := newServer(t, 0, nil)
	Run(t, time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC), func(t *testing.T, c *Clock) {
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		var err error
		wg.Go(func() { _, err = get(ctx, c, held.URL) })
		// Made outside the bubble, so waiting on it does not run the
		// clock: the clock would not run anyway while the request is
		// under way.
		<-held.arrived
		cancel()
		wg.Wait()
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("the cancelled request returned %v, want context.Canceled", err)
		}
		close(release) // the abandoned request ends; its answer is dropped
		for i := range 300 {
			if got, err := get(context.Background(), c, quick.URL); err != nil || got != quick.URL {
				t.Fatalf("request %d after the cancelled one: %q, %v", i, got, err)
			}
		}
	})
}
