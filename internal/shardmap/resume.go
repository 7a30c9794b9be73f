package shardmap

import "time"

// progress is what a Schedule call that did not finish had done towards
// creating a day's record: the previous day read, NewDay done (the
// catalogue entry written). The next call for the day resumes there rather than starting
// over, so that a setup the deadline cuts short makes progress from one
// delivery to the next, however slow the table (issue 28, item 9).
type progress struct {
	prev   *previous // the previous day, once read
	listed bool      // NewDay is done: the catalogue entry is written
	at     time.Time // when progress was last made
}

// Bounds of what a registry remembers of unfinished setups. The previous
// day's schedule is final by the time its next day's record is created (no
// step starts after its day), its hour index only gains late hours (the
// hints a new day's first step reads are lower bounds anyway), and a
// catalogue entry lives as long as the day: a memory this old is still
// true. maxProgress bounds the memory; past it, it starts again.
const (
	resumeFor   = 10 * time.Minute
	maxProgress = 1 << 14
)

// resume is where an earlier Schedule call of key stopped, or nothing.
func (r *Registry) resume(key string, now time.Time) progress {
	r.mu.Lock()
	defer r.mu.Unlock()
	p, ok := r.unfinished(key, now)
	if !ok {
		return progress{at: now}
	}
	p.at = now
	return p
}

// previousKnown says whether an earlier Schedule call of key that did not
// finish read the previous day (resume would give it back at now).
func (r *Registry) previousKnown(key string, now time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	p, ok := r.unfinished(key, now)
	return ok && p.prev != nil
}

// unfinished is what an earlier Schedule call of key left unfinished, when
// it is recent enough to resume from (resumeFor). The lock is held.
func (r *Registry) unfinished(key string, now time.Time) (progress, bool) {
	p, ok := r.progress[key]
	return p, ok && now.Sub(p.at) <= resumeFor
}

// leave keeps what a Schedule call of key did, for the next call; a call
// that finished leaves nothing to resume.
func (r *Registry) leave(key string, p progress, finished bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if finished || (p.prev == nil && !p.listed) {
		delete(r.progress, key)
		return
	}
	if r.progress == nil || len(r.progress) >= maxProgress {
		r.progress = map[string]progress{}
	}
	r.progress[key] = p
}
