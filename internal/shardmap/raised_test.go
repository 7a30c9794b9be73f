package shardmap

import (
	"testing"
	"time"

	"github.com/shardline/shardline/pkg/bucketing"
)

// TestRaisedIsWhenTheLastRaiseTookEffect: a schedule's first step is no
// raise; a raise of the base table takes effect at its minute, one of the
// GSI gsiSooner before it, each index's on its own; a step not yet in
// effect does not count.
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
		want Raises
	}{
		{"before any raise", at(9, 0), Raises{}},
		{"the table's raise in effect", at(10, 2), Raises{Table: at(10, 0)}},
		{"the GSI's raise in effect before its minute", at(11, 0).Add(-gsiSooner + time.Second), Raises{Table: at(10, 0), GSI: at(11, 0).Add(-gsiSooner)}},
		{"both", at(12, 0), Raises{Table: at(10, 0), GSI: at(11, 0).Add(-gsiSooner)}},
	} {
		if got := Raised(sched, day, c.now); !got.Table.Equal(c.want.Table) || !got.GSI.Equal(c.want.GSI) {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
	both := bucketing.Schedule{first, {From: 10 * 60, Shards: 8, GSIShards: 4}}
	if got := Raised(both, day, at(10, 0)); !got.Table.Equal(at(10, 0)) || !got.GSI.Equal(at(10, 0).Add(-gsiSooner)) {
		t.Errorf("a step raising both: %+v", got)
	}
	if got := Raised(bucketing.Schedule{first}, day, at(23, 0)); !got.Table.IsZero() || !got.GSI.IsZero() {
		t.Errorf("a schedule of one step: raised at %+v", got)
	}
}
