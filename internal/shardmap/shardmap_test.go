package shardmap

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/shardline/shardline/internal/catalog"
	"github.com/shardline/shardline/internal/schema"
	"github.com/shardline/shardline/pkg/bucketing"
	"github.com/shardline/shardline/testkit/testddb"
)

func TestMain(m *testing.M) { testddb.Main(m) }

type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

// registry is a registry of table on the clock c that lists a new day's
// source in the catalogue, as ingest's does; listed keeps to its client.
func registry(t *testing.T, table string, c *clock, shards, gsi int) *Registry {
	return listed(&Registry{
		Client: testddb.Client(t, testddb.Endpoint(t)),
		Table:  table,
		Now:    c.now,
		Config: Config{
			Shards:     bucketing.Counts{Default: shards},
			GSIShards:  bucketing.Counts{Default: gsi},
			Quarantine: 2,
			Retention:  24 * time.Hour,
		},
	})
}

// listed is r taking catalog.Record on its own client and table as its
// NewDay, as ingest's registry does (catalog.Lister), whatever client r is
// given later.
func listed(r *Registry) *Registry {
	r.NewDay = func(ctx context.Context, source, day string, expires time.Time) error {
		return catalog.Record(ctx, r.Client, r.Table, source, day, expires)
	}
	return r
}

func TestRaiseMidDayAppendsAStepAfterTheLead(t *testing.T) {
	ctx := context.Background()
	table := testddb.Table(t)
	day := "2026-11-22"
	src := bucketing.Stream{Space: bucketing.Events, Source: "hot#src"}
	c := &clock{time.Date(2026, 11, 22, 10, 0, 30, 0, time.UTC)}

	old := registry(t, table, c, 2, 1)
	s, err := old.Schedule(ctx, src, day)
	if err != nil {
		t.Fatal(err)
	}
	if len(s) != 1 || s[0] != (bucketing.Step{From: 0, Shards: 2, GSIShards: 1}) {
		t.Fatalf("first schedule %+v", s)
	}

	raised := registry(t, table, c, 8, 2)
	s, err = raised.Schedule(ctx, src, day)
	if err != nil {
		t.Fatal(err)
	}
	// 10:00:30 + 7m = 10:07:30, rounded up to 10:08.
	want := bucketing.Schedule{{From: 0, Shards: 2, GSIShards: 1}, {From: 10*60 + 8, Shards: 8, GSIShards: 2}}
	if len(s) != 2 || s[1] != want[1] {
		t.Fatalf("raised schedule %+v, want %+v", s, want)
	}
	// Every event already written (time at most now + 5 min) keeps its count.
	if got := s.At(c.t.Add(Lead - time.Minute)); got.Shards != 2 {
		t.Fatalf("an event at now+6m uses %d shards, want the old 2", got.Shards)
	}

	// The old writer keeps its cached schedule for CacheFor, then reads the
	// step; it does not lower the count back.
	c.t = c.t.Add(30 * time.Second)
	if s, _ := old.Schedule(ctx, src, day); len(s) != 1 {
		t.Fatalf("cached schedule changed early: %+v", s)
	}
	c.t = c.t.Add(CacheFor)
	if s, _ := old.Schedule(ctx, src, day); len(s) != 2 || s[1] != want[1] {
		t.Fatalf("old writer sees %+v, want %+v", s, want)
	}

	reader := registry(t, table, c, 1, 1)
	got, found, err := reader.Lookup(ctx, src, day)
	if err != nil || !found || got.MaxShards() != 8 || got.MaxGSIShards() != 2 {
		t.Fatalf("Lookup = %+v, %v, %v", got, found, err)
	}
	if _, found, _ := reader.Lookup(ctx, src, "2026-11-21"); found {
		t.Fatal("Lookup found a day nothing was written on")
	}
}

func TestPastAndFutureDaysKeepTheirCounts(t *testing.T) {
	ctx := context.Background()
	table := testddb.Table(t)
	src := bucketing.Stream{Space: bucketing.Events, Source: "s"}
	c := &clock{time.Date(2026, 11, 22, 23, 58, 0, 0, time.UTC)}
	// Yesterday and tomorrow (an event up to 5 minutes ahead) get records
	// with the counts of the moment.
	for _, day := range []string{"2026-11-21", "2026-11-23"} {
		if _, err := registry(t, table, c, 2, 1).Schedule(ctx, src, day); err != nil {
			t.Fatal(err)
		}
	}
	// A raise now starts at 00:06 tomorrow (23:58 + 7m, rounded up): too late
	// for yesterday, which keeps its count, and later than any event of
	// tomorrow written so far (at most 00:03), so tomorrow takes it.
	s, err := registry(t, table, c, 8, 1).Schedule(ctx, src, "2026-11-21")
	if err != nil || len(s) != 1 || s[0].Shards != 2 {
		t.Fatalf("yesterday: %+v, %v", s, err)
	}
	s, err = registry(t, table, c, 8, 1).Schedule(ctx, src, "2026-11-23")
	if err != nil || len(s) != 2 || s[1] != (bucketing.Step{From: 6, Shards: 8, GSIShards: 1}) {
		t.Fatalf("tomorrow: %+v, %v", s, err)
	}
}

func TestConcurrentWritersAgree(t *testing.T) {
	ctx := context.Background()
	table := testddb.Table(t)
	src := bucketing.Stream{Space: bucketing.Quarantine}
	c := &clock{time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)}
	results := make(chan bucketing.Schedule, 8)
	for range 8 {
		go func() {
			s, err := registry(t, table, c, 4, 1).Schedule(ctx, src, "2026-11-22")
			if err != nil {
				t.Error(err)
			}
			results <- s
		}()
	}
	for range 8 {
		s := <-results
		if len(s) != 1 || s[0].Shards != 2 { // the quarantine's own count
			t.Fatalf("schedule %+v", s)
		}
	}
}

// TestRaisingRetentionKeepsTheShardRecord: a record created under a 30-day
// retention, then used by writers configured for 90 days, lives at least as
// long as every event they may write for that day, and a writer still on
// 30 days (a container of the previous deployment) never shortens it again.
func TestRaisingRetentionKeepsTheShardRecord(t *testing.T) {
	ctx := context.Background()
	table := testddb.Table(t)
	day := "2026-11-22"
	src := bucketing.Stream{Space: bucketing.Events, Source: "s"}
	c := &clock{time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)}
	const days = 24 * time.Hour
	withRetention := func(r time.Duration, shards int) *Registry {
		reg := registry(t, table, c, shards, 1)
		reg.Config.Retention = r
		return reg
	}
	// The latest expiry an event of the day can get: its time is before the
	// day's end, and its TTL is its time plus the retention.
	latestEventExpiry := func(r time.Duration) int64 {
		return time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC).Add(r).Unix()
	}
	expiry := func() int64 {
		t.Helper()
		out, err := testddb.Client(t, testddb.Endpoint(t)).GetItem(ctx, &dynamodb.GetItemInput{
			TableName: aws.String(table), Key: metaKey(src.MetaPK(day)), ConsistentRead: aws.Bool(true),
		})
		if err != nil || out.Item == nil {
			t.Fatalf("shard record: %v %v", out, err)
		}
		n, err := intAttr(out.Item[schema.TTL])
		if err != nil {
			t.Fatalf("shard record's TTL: %v", err)
		}
		return int64(n)
	}

	if _, err := withRetention(30*days, 2).Schedule(ctx, src, day); err != nil {
		t.Fatal(err)
	}
	if got, want := expiry(), latestEventExpiry(30*days); got < want {
		t.Fatalf("at 30 days the record expires at %d, before the day's events (%d)", got, want)
	}

	// The deployment raises RETENTION_DAYS to 90; the same day goes on.
	c.t = c.t.Add(3 * time.Hour)
	if _, err := withRetention(90*days, 2).Schedule(ctx, src, day); err != nil {
		t.Fatal(err)
	}
	if got, want := expiry(), latestEventExpiry(90*days); got < want {
		t.Fatalf("after raising retention to 90 days the shard record expires at %v, before the day's events can (%v): "+
			"once it is gone, both read paths return nothing for the day",
			time.Unix(got, 0).UTC(), time.Unix(want, 0).UTC())
	}

	// An old container, still on 30 days, reads the record and appends a
	// step: neither shortens the record's life.
	c.t = c.t.Add(CacheFor)
	if _, err := withRetention(30*days, 2).Schedule(ctx, src, day); err != nil {
		t.Fatal(err)
	}
	s, err := withRetention(30*days, 8).Schedule(ctx, src, day)
	if err != nil || len(s) != 2 {
		t.Fatalf("raise by the old writer: %+v, %v", s, err)
	}
	if got, want := expiry(), latestEventExpiry(90*days); got < want {
		t.Fatalf("a 30-day writer shortened the record to %v (want at least %v)", time.Unix(got, 0).UTC(), time.Unix(want, 0).UTC())
	}
}

// TestQuarantineRaiseTakesEffectSooner: a rejected record is placed by
// when it was received, never ahead of now, so a step of the quarantine
// waits out only the writers' cache (QuarantineLead), where an event
// stream's waits out the events dated ahead too (Lead).
func TestQuarantineRaiseTakesEffectSooner(t *testing.T) {
	ctx := context.Background()
	table := testddb.Table(t)
	day := "2026-11-22"
	c := &clock{time.Date(2026, 11, 22, 10, 0, 10, 0, time.UTC)}
	r := registry(t, table, c, 4, 1)
	q := bucketing.Stream{Space: bucketing.Quarantine}
	s, raised, err := r.Raise(ctx, q, day, 6, 1)
	if err != nil || !raised {
		t.Fatalf("Raise: %v %v", raised, err)
	}
	// 10:00:10 + 2m = 10:02:10, rounded up to 10:03.
	want := bucketing.Schedule{{From: 0, Shards: 2, GSIShards: 1}, {From: 10*60 + 3, Shards: 6, GSIShards: 1}}
	if !slices.Equal(s, want) {
		t.Fatalf("quarantine schedule %+v, want %+v", s, want)
	}
	s, _, err = r.Raise(ctx, bucketing.Stream{Space: bucketing.Events, Source: "src"}, day, 6, 1)
	if err != nil || s.Last().From != 10*60+8 {
		t.Fatalf("an event stream's raise: %+v, %v; want it from 10:08", s, err)
	}
}

func TestRaiseAppendsThenRaisesThePendingStepInPlace(t *testing.T) {
	ctx := context.Background()
	table := testddb.Table(t)
	day := "2026-11-22"
	src := bucketing.Stream{Space: bucketing.Events, Source: "ramp"}
	c := &clock{time.Date(2026, 11, 22, 10, 0, 10, 0, time.UTC)}
	r := registry(t, table, c, 4, 1)

	s, raised, err := r.Raise(ctx, src, day, 4, 4)
	if err != nil || !raised {
		t.Fatalf("Raise: %v %v", raised, err)
	}
	want := bucketing.Schedule{{From: 0, Shards: 4, GSIShards: 1}, {From: 10*60 + 8, Shards: 4, GSIShards: 4}}
	if !slices.Equal(s, want) {
		t.Fatalf("schedule %+v, want %+v", s, want)
	}
	// Thirty seconds later the base table needs more too: the step that
	// has not started is raised, not followed by another.
	c.t = c.t.Add(30 * time.Second)
	other := registry(t, table, c, 4, 1) // another container
	s, raised, err = other.Raise(ctx, src, day, 16, 2)
	if err != nil || !raised {
		t.Fatalf("second Raise: %v %v", raised, err)
	}
	want[1] = bucketing.Step{From: 10*60 + 8, Shards: 16, GSIShards: 4}
	if !slices.Equal(s, want) {
		t.Fatalf("schedule %+v, want %+v", s, want)
	}
	// Asking for no more than is scheduled changes nothing.
	if s, raised, err = r.Raise(ctx, src, day, 8, 4); err != nil || raised || !slices.Equal(s, want) {
		t.Fatalf("Raise below the schedule: %+v %v %v", s, raised, err)
	}
	// Once the step is in effect, a raise follows it.
	c.t = c.t.Add(15 * time.Minute)
	if s, raised, err = r.Raise(ctx, src, day, 64, 16); err != nil || !raised || len(s) != 3 || s[2].From != 10*60+23 {
		t.Fatalf("third Raise: %+v %v %v", s, raised, err)
	}
	// The configuration is still the floor: a writer configured with 4/1
	// keeps the raised schedule.
	if got, err := registry(t, table, c, 4, 1).Schedule(ctx, src, day); err != nil || !slices.Equal(got, s) {
		t.Fatalf("Schedule after raises: %+v %v", got, err)
	}
}

func TestNewDaysStartFromThePreviousPeak(t *testing.T) {
	ctx := context.Background()
	table := testddb.Table(t)
	src := bucketing.Stream{Space: bucketing.Events, Source: "hot"}
	c := &clock{time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)}
	r := registry(t, table, c, 4, 1)
	r.Config.Carry = true
	if _, _, err := r.Raise(ctx, src, "2026-11-22", 64, 16); err != nil {
		t.Fatal(err)
	}
	// Day two starts where day one ended; day three, after a day without a
	// raise, at half; then down to the configured floor.
	for i, want := range []bucketing.Step{{Shards: 64, GSIShards: 16}, {Shards: 32, GSIShards: 8}, {Shards: 16, GSIShards: 4}, {Shards: 8, GSIShards: 2}, {Shards: 4, GSIShards: 1}, {Shards: 4, GSIShards: 1}} {
		c.t = c.t.Add(24 * time.Hour)
		day := bucketing.Day(c.t)
		s, err := r.Schedule(ctx, src, day)
		if err != nil {
			t.Fatal(err)
		}
		if len(s) != 1 || s[0] != want {
			t.Fatalf("day %d (%s): %+v, want %+v", i+2, day, s, want)
		}
	}
	// Without Carry, and for another source, the configuration alone.
	other := bucketing.Stream{Space: bucketing.Events, Source: "quiet"}
	if s, err := r.Schedule(ctx, other, bucketing.Day(c.t)); err != nil || s[0].Shards != 4 {
		t.Fatalf("quiet source: %+v %v", s, err)
	}
}

func TestGSICountsApplyACacheAfterTheRaise(t *testing.T) {
	day := time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)
	at := func(h, m int) time.Time { return day.Add(time.Duration(h)*time.Hour + time.Duration(m)*time.Minute) }
	sched := bucketing.Schedule{{From: 0, Shards: 4, GSIShards: 1}, {From: 8 * 60, Shards: 16, GSIShards: 16}}
	for _, c := range []struct {
		name      string
		t, now    time.Time
		shards, g int
	}{
		{"before the GSI count applies", at(7, 59), at(7, 53), 4, 1},
		{"a backlog event once it applies", at(7, 59), at(7, 54), 4, 16},
		{"a future event before it applies", at(8, 0), at(7, 50), 16, 1},
		{"after both apply", at(8, 30), at(8, 30), 16, 16},
		{"a late event on the next day", at(7, 0), at(24+3, 0), 4, 16},
	} {
		got := InEffect(sched, day, c.t, c.now)
		if got.Shards != c.shards || got.GSIShards != c.g {
			t.Errorf("%s: event at %s written at %s: %d/%d shards, want %d/%d",
				c.name, c.t.Format("15:04"), c.now.Format("01-02 15:04"), got.Shards, got.GSIShards, c.shards, c.g)
		}
	}

	// Whenever a raise is recorded, no writer uses its GSI count while a
	// reader may still trust a schedule read before it (CacheFor), and every
	// writer uses it within two minutes.
	base := bucketing.Schedule{{From: 0, Shards: 4, GSIShards: 1}}
	for w := at(10, 0); w.Before(at(11, 0)); w = w.Add(time.Second) {
		s := extend(base, "2026-11-22", bucketing.Step{Shards: 8, GSIShards: 8}, w.Add(Lead))
		if len(s) != 2 {
			t.Fatalf("raise at %s: %+v", w.Format(time.TimeOnly), s)
		}
		if g := InEffect(s, day, w, w.Add(CacheFor)).GSIShards; g != 1 {
			t.Fatalf("raise at %s: GSI count %d a cache's life later, want the old 1", w.Format(time.TimeOnly), g)
		}
		if g := InEffect(s, day, w, w.Add(2*time.Minute)).GSIShards; g != 8 {
			t.Fatalf("raise at %s: GSI count %d two minutes later, want 8", w.Format(time.TimeOnly), g)
		}
	}
}
