package shardmap

import (
	"context"
	"time"

	"github.com/shardline/shardline/pkg/bucketing"
)

// lastRead is what the registry last read or wrote of key, however long
// ago; ok is false when it never found the record.
func (r *Registry) lastRead(key string) (cached, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.cache[key]
	return c, ok
}

// remember keeps rec as what the registry last read or wrote of key, at now.
func (r *Registry) remember(key string, rec record, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cache == nil {
		r.cache = map[string]cached{}
	}
	r.cache[key] = cached{rec.sched, rec.expires, now}
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
