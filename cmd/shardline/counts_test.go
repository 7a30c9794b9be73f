package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/shardline/shardline/pkg/producer"
)

// TestCounts: once the counter function has counted the events sent,
// shardline counts charts them per type: each type's total, its peak, a
// bar per bucket (a blank for none) and the range's ends.
func TestCounts(t *testing.T) {
	localEnv(t)
	base := localAPI(t, true)
	hour := time.Now().UTC().Truncate(time.Hour)
	var evs []any
	for i := range 30 { // 30 clicks two hours ago, 10 views now
		evs = append(evs, event("cli/counts", fmt.Sprintf("c-%03d", i), "click", hour.Add(-2*time.Hour+time.Duration(i)*time.Second)))
	}
	for i := range 10 {
		evs = append(evs, event("cli/counts", fmt.Sprintf("v-%03d", i), "view", hour.Add(time.Duration(i)*time.Millisecond)))
	}
	if res, err := producer.NewHTTP(base).Send(context.Background(), evs...); err != nil || res.Accepted != 40 {
		t.Fatalf("send: %v %+v", err, res)
	}
	from := hour.Add(-3 * time.Hour).Format(time.RFC3339)
	to := hour.Add(time.Hour).Format(time.RFC3339)
	var out string
	eventually(t, "the counter to count 40 events", func() bool {
		code, o, errs := sh("counts", "-api", base, "-source", "cli/counts", "-from", from, "-to", to, "-interval", "1h")
		if code != 0 {
			t.Fatalf("counts: code %d, err %s", code, errs)
		}
		out = o
		return strings.Contains(o, "40 events in all")
	})
	for _, want := range []string{
		"counts of cli/counts from " + from + " to " + to + ": 4 buckets of 1h, one bar = 1h\n",
		"  click  30  peak 30  | █  |\n",
		"  view   10  peak 10  |   █|\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// One line for all, a minute a bucket, summed to fit 60 bars.
	code, out, errs := sh("counts", "-api", base, "-source", "cli/counts", "-from", from, "-to", to, "-interval", "1m", "-by-type=false", "-width", "60")
	if code != 0 || !strings.Contains(out, "240 buckets of 1m, one bar = 4 × 1m") || !strings.Contains(out, "  all types  40  peak 30  |") ||
		!strings.Contains(out, "\n"+strings.Repeat(" ", 26)+from+strings.Repeat(" ", 22)+to+"\n") {
		t.Fatalf("counts -by-type=false: code %d\nout %s\nerr %s", code, out, errs)
	}
	if code, _, errs := sh("counts", "-api", base, "-source", "cli/counts", "-interval", "2m"); code != 1 || !strings.Contains(errs, "400 Bad Request: interval: ") {
		t.Fatalf("bad interval: code %d, err %s", code, errs)
	}
}
