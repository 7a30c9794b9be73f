package bucketing

import (
	"fmt"
	"time"
)

// Step is one entry of a Schedule: from minute From of the day on, events are
// written to Shards base-table shards and GSIShards GSI shards.
type Step struct {
	From      int // minute of the UTC day, 0–1439
	Shards    int
	GSIShards int
	// DayBucket: the day's GSI time bucket is the whole UTC day, not the
	// hour. It is the same in every step of a schedule: it is chosen when
	// the day's record is created (a day that follows a quiet one) and
	// never changes, so each of the day's events has its GSI entry under
	// the day's one layout.
	DayBucket bool
	// NoGSICopy: the day's events have no GSI copy (the GSI is sparse):
	// they are written to the base table only, and read from its shards
	// by every path. Like DayBucket it is the same in every step: it is
	// chosen when the day's record is created (GSI_COPIES=where-it-pays,
	// on a day where the copy would not save its readers a request) and
	// never changes, so every writer and reader of the day agrees on it.
	// GSIShards means nothing on such a day and is never raised.
	NoGSICopy bool
}

// Copied says whether the step's events have a GSI copy.
func (st Step) Copied() bool { return !st.NoGSICopy }

// Schedule is the record of the shard counts in effect for one stream on one
// day, ordered by From, the first step from minute 0.
//
// An event's base-table shard depends on the step in effect at the event's
// own time, not at the time it is written, so a retry lands on the same item
// even after a count was raised. (Its GSI shard may follow the time of the
// write: an item has one GSI entry whatever its key; see the writer's
// registry.) Steps are only ever appended, and only from a minute
// later than any event already written could carry (see the writer's
// registry), so a step never changes the shard of a stored event. Readers
// query every shard below MaxShards() and so never miss an event written
// under an earlier, smaller count.
type Schedule []Step

// At is the step in effect at t, which must fall on the schedule's day.
func (s Schedule) At(t time.Time) Step {
	t = t.UTC()
	m := t.Hour()*60 + t.Minute()
	cur := s[0]
	for _, st := range s[1:] {
		if st.From > m {
			break
		}
		cur = st
	}
	return cur
}

// MaxShards is the largest base-table shard count of the day: a reader that
// queries shards [0, MaxShards) sees every event of the day.
func (s Schedule) MaxShards() int {
	n := 0
	for _, st := range s {
		n = max(n, st.Shards)
	}
	return n
}

// MaxGSIShards is the largest GSI shard count of the day.
func (s Schedule) MaxGSIShards() int {
	n := 0
	for _, st := range s {
		n = max(n, st.GSIShards)
	}
	return n
}

// Last is the step in effect at the end of the day.
func (s Schedule) Last() Step { return s[len(s)-1] }

// Validate reports a schedule that does not start at minute 0, is out of
// order, or holds a count outside [1, MaxShards].
func (s Schedule) Validate() error {
	if len(s) == 0 {
		return fmt.Errorf("empty shard schedule")
	}
	if s[0].From != 0 {
		return fmt.Errorf("shard schedule starts at minute %d, not 0", s[0].From)
	}
	for i, st := range s {
		if i > 0 && st.From <= s[i-1].From {
			return fmt.Errorf("shard schedule step %d (minute %d) is not after step %d", i, st.From, i-1)
		}
		if st.From >= 24*60 {
			return fmt.Errorf("shard schedule step %d starts at minute %d, past the end of the day", i, st.From)
		}
		if st.DayBucket != s[0].DayBucket {
			return fmt.Errorf("shard schedule step %d has a different GSI bucket from step 0", i)
		}
		if st.NoGSICopy != s[0].NoGSICopy {
			return fmt.Errorf("shard schedule step %d differs from step 0 in whether events have a GSI copy", i)
		}
		if st.NoGSICopy && st.DayBucket {
			return fmt.Errorf("shard schedule step %d has a GSI day bucket but no GSI copy", i)
		}
		if st.Shards < 1 || st.Shards > MaxShards || st.GSIShards < 1 || st.GSIShards > MaxShards {
			return fmt.Errorf("shard schedule step %d has counts %d/%d outside [1, %d]", i, st.Shards, st.GSIShards, MaxShards)
		}
	}
	return nil
}
