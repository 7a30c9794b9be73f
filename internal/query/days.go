package query

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/shardline/shardline/internal/schema"
	"github.com/shardline/shardline/internal/shardmap"
	"github.com/shardline/shardline/pkg/bucketing"
)

// The planner's day reads: what it knows of each day of the range, from the
// page's own reads, the container's cache, or a read.

// dayCache keeps, per container, what the reader learned of each (stream,
// day): its schedule, its hour index and hints. An entry is trusted for
// shardmap.CacheFor, and only to include what it names: a schedule only
// grows, and no writer uses a step's counts until a CacheFor after it was
// written (shardmap.InEffect), so a cached one still finds every shard; and an hour the entry lists holds events.
// An hour the entry does not list may have been marked since, so before a
// page skips it the page reads the day afresh.
type dayCache struct {
	mu   sync.Mutex
	days map[string]cachedDay
}

type cachedDay struct {
	day shardmap.Day
	at  time.Time
}

// maxCachedDays bounds the cache; past it the cache starts again.
const maxCachedDays = 1 << 14

func (c *dayCache) get(key string, now time.Time) (shardmap.Day, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.days[key]
	if !ok || now.Sub(e.at) > shardmap.CacheFor {
		return shardmap.Day{}, false
	}
	return e.day, true
}

func (c *dayCache) put(key string, d shardmap.Day, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.days == nil || len(c.days) >= maxCachedDays {
		c.days = map[string]cachedDay{}
	}
	c.days[key] = cachedDay{d, now}
}

// dayMemo is what one page read of each day, so that it reads a day at
// most once afresh, however many of its segments ask at once.
type dayMemo struct {
	mu    sync.Mutex
	days  map[string]shardmap.Day
	fresh map[string]bool
	busy  map[string]chan struct{} // closed when the read under way ends
}

// day is what the page knows of day: from this page's own reads, the
// container's cache unless fresh is asked for, or a read (one request).
// A page reads a day afresh at most once.
func (pl *planner) day(ctx context.Context, day string, fresh bool) (shardmap.Day, error) {
	s := pl.stream
	key := s.MetaPK(day)
	m := &pl.memo
	for {
		m.mu.Lock()
		if d, ok := pl.knownLocked(key, fresh); ok {
			m.mu.Unlock()
			return d, nil
		}
		wait, reading := m.busy[key]
		if !reading {
			m.busy[key] = make(chan struct{})
			m.mu.Unlock()
			break
		}
		m.mu.Unlock()
		select {
		case <-wait: // then look again: the read may have failed
		case <-ctx.Done():
			return shardmap.Day{}, ctx.Err()
		}
	}
	d, err := pl.reqs.readDay(ctx, s, day)
	m.mu.Lock()
	if err == nil {
		m.days[key] = d
		m.fresh[key] = true
	}
	close(m.busy[key])
	delete(m.busy, key)
	m.mu.Unlock()
	if err != nil {
		return shardmap.Day{}, err
	}
	if d.Sched != nil {
		pl.cache.put(key, d, pl.now())
	}
	return d, nil
}

// knownLocked is what the page knows of the day of key without a read:
// from its own reads, or from the container's cache unless fresh is asked
// for (the page then keeps it). The memo's lock is held.
func (pl *planner) knownLocked(key string, fresh bool) (shardmap.Day, bool) {
	m := &pl.memo
	if d, ok := m.days[key]; ok && (m.fresh[key] || !fresh) {
		return d, true
	}
	if !fresh {
		if d, ok := pl.cache.get(key, pl.now()); ok {
			m.days[key] = d
			return d, true
		}
	}
	return shardmap.Day{}, false
}

// known says whether the page knows day without a read, or has one under
// way.
func (pl *planner) known(day string, fresh bool) bool {
	key := pl.stream.MetaPK(day)
	pl.memo.mu.Lock()
	defer pl.memo.mu.Unlock()
	_, ok := pl.knownLocked(key, fresh)
	_, busy := pl.memo.busy[key]
	return ok || busy
}

// prefetch reads the shard records and hour indexes of those of days the
// page does not know, all in one BatchGetItem, strongly consistent as
// readDay is: a range of quiet days costs one request rather than one a
// day. The days then come from the page's memo, as if each had been read
// afresh on its own.
func (pl *planner) prefetch(ctx context.Context, days []string, fresh bool) error {
	s := pl.stream
	var todo []string
	var keys []map[string]types.AttributeValue
	for _, day := range days {
		if !pl.known(day, fresh) {
			todo = append(todo, day)
			keys = append(keys, shardmap.DayKeys(s, day)...)
		}
	}
	if len(todo) < 2 {
		return nil // one day is one Query, as readDay makes it
	}
	got, err := pl.reqs.batchGet(ctx, keys, nil, true)
	if err != nil {
		return fmt.Errorf("shard records of %s to %s: %w", todo[0], todo[len(todo)-1], err)
	}
	read := map[string]shardmap.Day{}
	for _, day := range todo {
		var items []map[string]types.AttributeValue
		for _, k := range shardmap.DayKeys(s, day) {
			if it, ok := got[[2]string{schema.S(k[schema.PK]), schema.S(k[schema.SK])}]; ok {
				items = append(items, it)
			}
		}
		d, err := shardmap.DecodeDay(items)
		if err != nil {
			return fmt.Errorf("%s: %w", s.MetaPK(day), err)
		}
		read[day] = d
	}
	m := &pl.memo
	m.mu.Lock()
	for day, d := range read {
		key := s.MetaPK(day)
		if _, busy := m.busy[key]; !busy {
			m.days[key], m.fresh[key] = d, true
		}
	}
	m.mu.Unlock()
	for day, d := range read {
		if d.Sched != nil {
			pl.cache.put(s.MetaPK(day), d, pl.now())
		}
	}
	return nil
}

// hint is a lower bound of the events in the step-long bucket starting at
// start (on a GSI day bucket, the first hour's bucket holds the day's),
// from what the page already read of its day; -1 when the page does not
// know. It never reads: it only keeps a page from opening
// buckets ahead that its hints say it will not need (window.go).
func (pl *planner) hint(start time.Time, step time.Duration) int {
	key := pl.stream.MetaPK(bucketing.Day(start))
	pl.memo.mu.Lock()
	d, ok := pl.memo.days[key]
	pl.memo.mu.Unlock()
	if !ok || d.Sched == nil {
		return -1
	}
	if step == time.Hour { // the GSI: hour buckets, or a day's
		if !dayWide(d) {
			return d.Hint(start.UTC().Hour())
		}
		if !start.Equal(pl.firstHour(start)) {
			return 0 // the day's bucket went with its first hour
		}
	}
	from, to := pl.dayRange(start)
	n := 0
	for t := from.Truncate(time.Hour); t.Before(to); t = t.Add(time.Hour) {
		h := d.Hint(t.UTC().Hour())
		if h < 0 {
			return -1
		}
		n += h
	}
	return n
}

// dayRange is the part of the page's span on the day of t.
func (pl *planner) dayRange(t time.Time) (from, to time.Time) {
	start := t.UTC().Truncate(24 * time.Hour)
	return maxTime(start, pl.b.from), minTime(start.Add(24*time.Hour), pl.b.to)
}

// marked is what the page knows of day, and whether the day may hold
// events in [from, to), which lies within it: from the cache (unless
// fresh) when that says it may, afresh otherwise, since a cached day is
// trusted only to include an hour.
func (pl *planner) marked(ctx context.Context, day string, from, to time.Time, fresh bool) (shardmap.Day, bool, error) {
	d, err := pl.day(ctx, day, fresh)
	if err == nil && (d.Sched == nil || !anyMarked(d, from, to)) {
		d, err = pl.day(ctx, day, true) // what the page knows may be older than a mark
	}
	if err != nil || d.Sched == nil || !anyMarked(d, from, to) {
		return d, false, err
	}
	return d, true, nil
}

// firstHour is the start of the first hour bucket the page visits of the
// day of t: the range's first on the day in ascending order, its last in
// descending order.
func (pl *planner) firstHour(t time.Time) time.Time {
	from, to := pl.dayRange(t)
	if pl.p.Order == Asc {
		return from.Truncate(time.Hour)
	}
	return to.Add(-time.Nanosecond).Truncate(time.Hour)
}
