package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shardline/shardline/local/syncbuf"
	"github.com/shardline/shardline/pkg/producer"
)

// TestTailFollow: tail -f prints the newest -n events oldest first, then
// every event stored while it follows exactly once: new ones, a late one
// (older than events already printed, within -late), and none again when
// it is sent twice; one stored later than -late after its time is not
// shown. Ctrl-C (its context) ends it without an error.
func TestTailFollow(t *testing.T) {
	localEnv(t)
	base := localAPI(t, false)
	h := producer.NewHTTP(base)
	ctx := context.Background()
	now := time.Now().UTC()
	send := func(evs ...string) {
		t.Helper()
		var in []any
		for _, e := range evs {
			in = append(in, e)
		}
		if res, err := h.Send(ctx, in...); err != nil || res.Accepted != len(evs) {
			t.Fatalf("send: %v, %+v", err, res)
		}
	}
	var old []string
	for i := range 12 {
		old = append(old, event("cli/tail", fmt.Sprintf("t-%03d", i), "t", now.Add(time.Duration(i-20)*time.Second)))
	}
	send(old...)

	f := newTailFlags(&syncbuf.Buffer{})
	if err := f.parse([]string{"-api", base, "-source", "cli/tail", "-f", "-n", "5", "-interval", "20ms", "-late", "1m"}); err != nil {
		t.Fatal(err)
	}
	c, err := f.api.client(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var out syncbuf.Buffer
	tctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- runTail(tctx, c, f, &out) }()
	printed := func() []string { return ndjson(t, out.String()) }
	eventually(t, "the newest 5", func() bool { return len(printed()) >= 5 })
	if got := printed(); !slices.Equal(got, ids("t", 7, 12)) {
		t.Fatalf("tail -n 5 printed %v, want t-007..t-011 oldest first", got)
	}

	// New events over several polls, a late one, a repeat, one too late.
	send(event("cli/tail", "t-100", "t", time.Now()), event("cli/tail", "t-101", "t", time.Time{}))
	send(event("cli/tail", "t-102", "t", now.Add(-30*time.Second)))             // late: older than t-011
	send(old[11], event("cli/tail", "t-103", "t", time.Now().Add(time.Second))) // t-011 again
	send(event("cli/tail", "t-104", "t", now.Add(-10*time.Minute)))             // later than -late
	send(event("cli/tail", "t-105", "t", time.Now()))
	eventually(t, "the events sent while following", func() bool { return slices.Contains(printed(), "t-105") && len(printed()) >= 10 })
	// A few more polls, to see that nothing comes twice.
	polls := out.String()
	time.Sleep(200 * time.Millisecond) // about ten more polls
	stop()
	if err := <-done; err != nil {
		t.Fatalf("tail -f: %v", err)
	}
	got := printed()
	want := append(ids("t", 7, 12), "t-100", "t-101", "t-102", "t-103", "t-105")
	if !containsAll(got, want) || len(got) != len(want) || out.String() != polls {
		t.Fatalf("tail -f printed %v, want each of %v once", got, want)
	}
	if strings.Contains(out.String(), "t-104") {
		t.Fatal("an event stored 10 minutes after its time was printed, past -late")
	}
}

// TestTailSinceLargest: the largest -since the flag takes, 744h (31 days),
// reads back that far: the range it asks for is clamped to the API's 31
// days, with the 6 minutes it reaches ahead for producers' clocks. Before,
// it asked for 31 days and 6 minutes and every run failed with a 400.
func TestTailSinceLargest(t *testing.T) {
	localEnv(t)
	base := localAPI(t, false)
	now := time.Now().UTC()
	evs := []any{event("cli/since", "s-old", "t", now.Add(-29*24*time.Hour)), event("cli/since", "s-new", "t", now.Add(-time.Hour))}
	if res, err := producer.NewHTTP(base).Send(context.Background(), evs...); err != nil || res.Accepted != 2 {
		t.Fatalf("send: %v, %+v", err, res)
	}
	for since, want := range map[string][]string{"744h": {"s-old", "s-new"}, "24h": {"s-new"}} {
		f := newTailFlags(&syncbuf.Buffer{})
		if err := f.parse([]string{"-api", base, "-source", "cli/since", "-since", since}); err != nil {
			t.Fatal(err)
		}
		c, err := f.api.client(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		var out syncbuf.Buffer
		if err := runTail(context.Background(), c, f, &out); err != nil {
			t.Fatalf("tail -since %s: %v", since, err)
		}
		if got := ndjson(t, out.String()); !slices.Equal(got, want) {
			t.Fatalf("tail -since %s printed %v, want %v", since, got, want)
		}
	}
	if err := newTailFlags(&syncbuf.Buffer{}).parse([]string{"-source", "s", "-since", "745h"}); err == nil || !strings.Contains(err.Error(), "744h") {
		t.Fatalf("-since 745h: %v, want an error naming 744h", err)
	}
}
