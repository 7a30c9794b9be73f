package shardmap

import (
	"testing"
	"time"

	"github.com/shardline/shardline/pkg/bucketing"
)

// TestRaisedIsWhenTheLastRaiseTookEffect: a schedule's first step is no
// raise; a raise of the base table takes effect at its minute, one of the
// GSI gsiSooner before it; a step not yet in effect does not count.
func TestRaisedIsWhenTheLastRaiseTookEffect(t *testing.T) {
	day := time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC)
	at := func(h, m int) time.Time { return day.Add(time.Duration(h*60+m) * time.Minute) }
	first := bucketing.Step{Shards: 4, GSIShards: 1}
	table := bucketing.Step{From: 10 * 60, Shards: 8, GSIShards: 1}
	gsi := bucketing.Step{From: 11 * 60, Shards: 8, GSIShards: 4}
	sched := bucketing.Schedule{first, table, gsi}
	for _, c := range []struct {
		name string
		now  time.Time
		want time.Time
	}{
		{"before any raise", at(9, 0), time.Time{}},
		{"the table's raise in effect", at(10, 2), at(10, 0)},
		{"the GSI's raise in effect before its minute", at(11, 0).Add(-gsiSooner + time.Second), at(11, 0).Add(-gsiSooner)},
		{"both", at(12, 0), at(11, 0).Add(-gsiSooner)},
	} {
		if got := Raised(sched, day, c.now); !got.Equal(c.want) {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
	if got := Raised(bucketing.Schedule{first}, day, at(23, 0)); !got.IsZero() {
		t.Errorf("a schedule of one step: raised at %v", got)
	}
}
