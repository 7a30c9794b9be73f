package shardmap

import (
	"context"
	"time"

	"github.com/shardline/shardline/pkg/bucketing"
)

// cached is what the registry read of key within CacheFor of now.
func (r *Registry) cached(key string, now time.Time) (cached, bool) {
	c, ok := r.lastRead(key)
	return c, ok && now.Sub(c.at) < CacheFor
}

// lastRead is what the registry last read or wrote of key, however long
// ago; ok is false when it never found the record.
func (r *Registry) lastRead(key string) (cached, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.cache[key]
	return c, ok
}

func (r *Registry) remember(key string, rec record, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cache == nil {
		r.cache = map[string]cached{}
	}
	r.cache[key] = cached{rec.sched, rec.expires, now}
}

// Cached is the schedule of stream on day as a reader that tolerates
// eventual consistency needs it: a record read within CacheFor is reused
// (the writers' cache, if this registry also writes). That is safe because
// no writer uses a raised count until more than CacheFor after the raise
// is recorded (Lead for the table, see InEffect for the GSI), when every
// copy cached before the raise has expired. An absent record is not cached: it
// may appear any moment. read says whether DynamoDB was asked.
func (r *Registry) Cached(ctx context.Context, s bucketing.Stream, day string) (sched bucketing.Schedule, read bool, err error) {
	key := s.MetaPK(day)
	now := r.now()
	if c, ok := r.cached(key, now); ok {
		return c.sched, false, nil
	}
	rec, err := r.read(ctx, key)
	if err != nil {
		return nil, true, err
	}
	if rec.sched != nil {
		r.remember(key, rec, now)
	}
	return rec.sched, true, nil
}

// Known is the schedule of stream on day that this registry read or wrote
// last, however long ago, without asking DynamoDB; ok is false when it has
// none. Adaptive sharding decides on it: a raise it misses is one the
// record already holds, and Raise reads the record before it writes.
func (r *Registry) Known(s bucketing.Stream, day string) (sched bucketing.Schedule, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.cache[s.MetaPK(day)]
	return c.sched, ok
}

// Lookup reads the schedule of stream on day without changing anything;
// found is false when nothing was written that day. The read is strongly
// consistent, as the record is written before the first event of the day.
func (r *Registry) Lookup(ctx context.Context, s bucketing.Stream, day string) (sched bucketing.Schedule, found bool, err error) {
	rec, err := r.read(ctx, s.MetaPK(day))
	return rec.sched, rec.sched != nil, err
}
