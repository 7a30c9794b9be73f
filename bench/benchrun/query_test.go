package benchrun

import (
	"testing"
	"time"
)

// TestSpreadStaysWithinTheWeek: every event of the query benchmark's
// sources falls in the seven days before now, oldest first. The busy
// sources' 25,200 events once overflowed and got times centuries away.
func TestSpreadStaysWithinTheWeek(t *testing.T) {
	now := time.Date(2026, 11, 27, 19, 39, 48, 0, time.UTC)
	for _, s := range sources {
		n := 7 * 24 * s.perHour
		prev := now.Add(-8 * 24 * time.Hour)
		for i := n - 1; i >= 0; i-- {
			at := spread(now, n, i)
			if at.Before(now.Add(-7*24*time.Hour)) || !at.Before(now) || !at.After(prev) {
				t.Fatalf("%s: event %d of %d at %v, want within the week before %v and after %v", s.name, i, n, at, now, prev)
			}
			prev = at
		}
	}
}
