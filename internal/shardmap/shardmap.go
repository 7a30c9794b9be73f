// Package shardmap records, for every (stream, day), the shard counts in
// effect, so that readers find every shard a day was written to with one
// small read and a retried event lands on the same item after a raise.
// docs/keys.md ("Shard record") says what a record holds, when it gains a
// step and how long it lives.
package shardmap

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/shardline/shardline/internal/cloudevent"
	"github.com/shardline/shardline/pkg/bucketing"
)

// CacheFor is how long a writer trusts a schedule it read.
const CacheFor = time.Minute

// Lead is how far after now a new step starts.
const Lead = cloudevent.MaxFuture + 2*CacheFor

// QuarantineLead is how far after now a new step of the quarantine's
// schedule starts. A rejected record is placed by when it was received,
// which is never ahead of now: once every writer has re-read the record
// (CacheFor), none can place a record received after the step without
// knowing it, so a retry lands on the same item. Twice CacheFor leaves a
// margin for the rounding to a minute and for clocks.
const QuarantineLead = 2 * CacheFor

// leadOf is how far after now a new step of s starts.
func leadOf(s bucketing.Stream) time.Duration {
	if s.Space == bucketing.Quarantine {
		return QuarantineLead
	}
	return Lead
}

// gsiSooner is how much sooner than its base-table counts a step's GSI
// count applies: a step's GSI count applies CacheFor after the step was
// recorded instead of Lead after (see InEffect).
const gsiSooner = Lead - CacheFor

// InEffect is the step a writer places an event of time t, on the day that
// begins at day, by at now: the base-table count in effect at the event's
// own time, and the GSI count of the last step whose GSI count applies by
// now.
//
// The base-table count must follow the event's time: it names the item, and
// a retry must land on the same item. The GSI count need not: an item has
// one GSI entry whatever its GSI key, so writing an event again under a
// larger GSI count moves its entry and cannot duplicate it. What the GSI
// count must respect is the readers' cache: a reader trusts a schedule it
// read for CacheFor and queries every GSI shard below the largest count it
// names, so a new count may be used only once no reader can still hold a
// schedule without it. A step is recorded before its From minus Lead, so
// from From minus (Lead - CacheFor) on, every schedule a reader trusts
// names it. A source's GSI keys thus spread six minutes sooner than its
// table keys, which matters when a backlog of events stamped before the
// step is still being written.
func InEffect(sched bucketing.Schedule, day, t, now time.Time) bucketing.Step {
	step := sched.At(t)
	step.GSIShards = sched[0].GSIShards
	for _, st := range sched[1:] {
		if day.Add(time.Duration(st.From)*time.Minute - gsiSooner).After(now) {
			break
		}
		step.GSIShards = max(step.GSIShards, st.GSIShards)
	}
	return step
}

// Raises are when the last raise of each index took effect: zero for an
// index its schedule has not raised yet.
type Raises struct {
	Table, GSI time.Time
}

// Raised is when the last raise of each index in sched in effect at now
// took effect: the base table's at its step's minute, the GSI's gsiSooner
// before it. An index sched's first step still holds for is zero. day is
// the start of sched's UTC day.
func Raised(sched bucketing.Schedule, day, now time.Time) Raises {
	var r Raises
	for i := 1; i < len(sched); i++ {
		st := day.Add(time.Duration(sched[i].From) * time.Minute)
		if sched[i].GSIShards > sched[i-1].GSIShards {
			if g := st.Add(-gsiSooner); !g.After(now) && g.After(r.GSI) {
				r.GSI = g
			}
		}
		if sched[i].Shards > sched[i-1].Shards && !st.After(now) && st.After(r.Table) {
			r.Table = st
		}
	}
	return r
}

// metaSK is the sort key of every shard-count record.
const metaSK = "shards"

// API is the part of the DynamoDB client the registry uses.
type API interface {
	GetItem(context.Context, *dynamodb.GetItemInput, ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	PutItem(context.Context, *dynamodb.PutItemInput, ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	BatchGetItem(context.Context, *dynamodb.BatchGetItemInput, ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error)
}

// Config is what a writer wants: the counts it is configured with.
type Config struct {
	Shards     bucketing.Counts // base-table shards per event source
	GSIShards  bucketing.Counts // GSI shards per event source
	Quarantine int              // base-table shards of the quarantine
	Retention  time.Duration    // how long events live; the shard record outlives the day by at least this much
	// Carry starts an event stream's day from the counts its previous day
	// reached, when they are above the configuration: all of them if the
	// previous day was raised, half of them if it was not (so that counts a
	// source no longer needs decay by half a day). Adaptive sharding sets
	// it; the configuration stays the floor.
	Carry bool
	// Copies says on which days events get a GSI copy; empty is
	// CopiesAlways. The decision is made when a day's record is created
	// and kept in it (bucketing.Step.NoGSICopy).
	Copies Copies
}

func (c Config) want(s bucketing.Stream) (int, int) {
	if s.Space == bucketing.Quarantine {
		return c.Quarantine, 1
	}
	return c.Shards.For(s.Source), c.GSIShards.For(s.Source)
}

// Registry reads and writes shard-count records. It is safe for concurrent
// use; one per container caches what it read.
type Registry struct {
	Client API
	Table  string
	Config Config
	Now    func() time.Time // defaults to time.Now
	// NewDay is the step the registry's owner names for a day of an event
	// stream whose record the registry is about to create: ingest lists
	// the source in the day's catalogue (catalog.Lister). It runs before
	// the record is written, so that what it writes cannot go missing
	// after it, and once (progress remembers it); nil: nothing.
	NewDay func(ctx context.Context, source, day string, expires time.Time) error

	mu       sync.Mutex
	cache    map[string]cached
	progress map[string]progress // setups left unfinished, see Schedule
}

type cached struct {
	sched   bucketing.Schedule
	expires int64 // the record's TTL when read
	at      time.Time
}

func (r *Registry) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// Schedule is the schedule writers must use for stream on day (a
// bucketing.DayLayout string), creating or extending the record as the
// configuration asks: a step when it asks for more shards, a later expiry
// when its retention outlasts the record.
//
// Creating a day's record is at most three requests one after another:
// the reads (the day's record, and the previous day's record and hour
// index, which the first step depends on, all at once), NewDay (ingest's
// catalogue entry), the record. The first time a registry meets a
// (stream, day) it reads the previous day beside the day itself, before it
// knows whether the day's record exists: at midnight every source's first
// batch finds none, and a wasted read of two small items costs less than a
// request's wait. The caller may mark the day's hours (Hours.Mark) at the
// same time: nothing here depends on them. A call that fails or is cut
// short leaves what it finished (the previous day read, NewDay done) for
// the next call, which resumes there (progress).
func (r *Registry) Schedule(ctx context.Context, s bucketing.Stream, day string) (bucketing.Schedule, error) {
	return r.ScheduleRead(ctx, s, day, Read{})
}

// ScheduleRead is Schedule with what ReadAhead read of (stream, day): it
// makes none of the reads ahead holds (on its first turn: a write that
// loses a race reads the record again), only those it lacks.
func (r *Registry) ScheduleRead(ctx context.Context, s bucketing.Stream, day string, ahead Read) (bucketing.Schedule, error) {
	key := s.MetaPK(day)
	now := r.now()
	c, seen := r.lastRead(key)
	if r.fresh(c, seen, day, now) {
		return c.sched, nil
	}
	p := r.resume(key, now)
	if p.prev == nil {
		p.prev = ahead.prev
	}
	sched, err := r.schedule(ctx, s, day, seen, &p, ahead, now)
	r.leave(key, p, err == nil)
	return sched, err
}

// fresh says whether c, what the registry last read of a record of day
// (seen: it read one), still holds at now: read within CacheFor, and with
// the expiry this writer gives the day.
func (r *Registry) fresh(c cached, seen bool, day string, now time.Time) bool {
	return seen && now.Sub(c.at) < CacheFor && r.keepUntil(record{sched: c.sched, expires: c.expires}, day) == c.expires
}

// schedule is Schedule past the cache: it reads the record of s on day
// (but what ahead holds) and writes it as the configuration asks, from
// where p says an earlier call stopped, and keeps in p what it finishes.
func (r *Registry) schedule(ctx context.Context, s bucketing.Stream, day string, seen bool, p *progress, ahead Read, now time.Time) (bucketing.Schedule, error) {
	key := s.MetaPK(day)
	wantN, wantG := r.Config.want(s)
	for turn := range 8 { // each turn loses a race to another writer; eight is plenty
		rec, readAt := record{}, now // readAt: when rec was read, at the latest
		var err error
		if turn == 0 && ahead.rec != nil {
			rec, readAt = *ahead.rec, ahead.at
		} else {
			rec, err = r.readDay(ctx, s, day, !seen && p.prev == nil, &p.prev)
		}
		if err != nil {
			return nil, err
		}
		first := bucketing.Step{Shards: wantN, GSIShards: wantG}
		if rec.sched != nil && rec.sched[0].NoGSICopy && rec.sched[0].Shards == 1 {
			// A day without copies that began on one table shard (the
			// day after a quiet day, see Copies) is below the
			// configuration by design: it is not raised to it, only by
			// adaptive sharding (Raise), as it turns busy.
			first.Shards = 1
		}
		if rec.sched == nil && s.Space == bucketing.Events {
			if first, err = r.start(ctx, s, day, first, &p.prev); err != nil {
				return nil, err
			}
		}
		next, changed := r.update(rec, day, first, now)
		if changed && rec.sched == nil && s.Space == bucketing.Events && !p.listed {
			// The first writer of the day takes NewDay before it creates
			// the record: once the record exists no writer comes this way
			// again.
			if r.NewDay != nil {
				if err := r.NewDay(ctx, s.Source, day, unixOrZero(next.expires)); err != nil {
					return nil, err
				}
			}
			p.listed = true
		}
		if changed {
			err = r.write(ctx, key, next)
		}
		var cond *types.ConditionalCheckFailedException
		if errors.As(err, &cond) {
			continue
		}
		if err != nil {
			return nil, err
		}
		r.remember(key, next, readAt)
		return next.sched, nil
	}
	return nil, fmt.Errorf("shard record %s: too many concurrent updates", key)
}

// Raise records that writers of stream on day (a bucketing.DayLayout
// string) must use at least n base-table and g GSI shards, from Lead after
// now, unless the schedule already reaches those counts: it is
// RaiseUnlessCovered with the counts as their own cover.
func (r *Registry) Raise(ctx context.Context, s bucketing.Stream, day string, n, g int) (sched bucketing.Schedule, raised bool, err error) {
	to := bucketing.Step{Shards: n, GSIShards: g}
	return r.RaiseUnlessCovered(ctx, s, day, to, to)
}

// RaiseUnlessCovered appends to the schedule of stream on day a step, from
// Lead after now (QuarantineLead for the quarantine), with at least to's counts, unless its last step (pending
// or in effect) already has cover's counts, or the step would start after
// the day. cover is what the demand that asked for the raise needs at the
// ceiling, to what it asks with headroom: several writers that measured the
// same demand end at one step, whichever wins, and a pending raise that
// carries the demand stops further ones. Concurrent raises agree through
// the record's version: a writer that loses the race reads the record
// again and decides on what won. The schedule is created first if the day
// has none. raised says whether this call added the step.
func (r *Registry) RaiseUnlessCovered(ctx context.Context, s bucketing.Stream, day string, to, cover bucketing.Step) (sched bucketing.Schedule, raised bool, err error) {
	if _, err := r.Schedule(ctx, s, day); err != nil {
		return nil, false, err
	}
	key := s.MetaPK(day)
	now := r.now()
	for range 8 {
		rec, err := r.read(ctx, key)
		if err != nil {
			return nil, false, err
		}
		if rec.sched == nil {
			return nil, false, fmt.Errorf("shard record %s: gone while raising", key)
		}
		var next bucketing.Schedule
		// A day without GSI copies has no GSI keys to raise.
		if last := rec.sched.Last(); last.Shards < cover.Shards || (last.Copied() && last.GSIShards < cover.GSIShards) {
			next = extend(rec.sched, day, to, now.Add(leadOf(s)))
		}
		if next == nil {
			r.remember(key, rec, now)
			return rec.sched, false, nil
		}
		up := record{sched: next, ver: rec.ver, expires: rec.expires}
		err = r.write(ctx, key, up)
		var cond *types.ConditionalCheckFailedException
		if errors.As(err, &cond) {
			continue
		}
		if err != nil {
			return nil, false, err
		}
		r.remember(key, up, now)
		return next, true, nil
	}
	return nil, false, fmt.Errorf("shard record %s: too many concurrent updates", key)
}

// update is the record to store in place of rec, and whether it differs
// from rec. first is the day's first step, if rec is still to be created.
func (r *Registry) update(rec record, day string, first bucketing.Step, now time.Time) (record, bool) {
	sched := extend(rec.sched, day, first, now.Add(Lead))
	expires := r.keepUntil(rec, day)
	if sched == nil && expires == rec.expires {
		return rec, false
	}
	if sched == nil {
		sched = rec.sched
	}
	return record{sched: sched, ver: rec.ver, expires: expires}, true
}

func unixOrZero(sec int64) time.Time {
	if sec == 0 {
		return time.Time{}
	}
	return time.Unix(sec, 0)
}

// keepUntil is the TTL the record of day must have for this writer: at
// least the latest expiry this writer gives an event of the day (the day's
// end plus the retention), and never earlier than it already is. A record
// without a TTL keeps none.
func (r *Registry) keepUntil(rec record, day string) int64 {
	if rec.sched != nil && rec.expires == 0 {
		return 0
	}
	d, err := time.Parse(bucketing.DayLayout, day)
	if err != nil || r.Config.Retention <= 0 {
		return rec.expires
	}
	return max(rec.expires, d.Add(24*time.Hour+r.Config.Retention).Unix())
}

// extend returns the schedule to store, or nil when sched is fine as it is:
// want's counts from the minute after at (Lead after now, or the stream's
// lead), or want itself from minute 0 when there is no schedule yet.
func extend(sched bucketing.Schedule, day string, want bucketing.Step, at time.Time) bucketing.Schedule {
	if sched == nil {
		want.From = 0
		return bucketing.Schedule{want}
	}
	wantN, wantG := want.Shards, want.GSIShards
	last := sched.Last()
	if last.NoGSICopy {
		wantG = last.GSIShards // nothing to spread on the GSI
	}
	if wantN <= last.Shards && wantG <= last.GSIShards {
		return nil
	}
	from := at.Truncate(time.Minute).Add(time.Minute).UTC()
	if bucketing.Day(from) != day {
		// The day is over, or has not begun, by the time the step would
		// start: a past day keeps its counts, and a future day gets the
		// step once it has begun.
		return nil
	}
	m := from.Hour()*60 + from.Minute()
	step := bucketing.Step{From: m, Shards: max(wantN, last.Shards), GSIShards: max(wantG, last.GSIShards),
		DayBucket: last.DayBucket, NoGSICopy: last.NoGSICopy}
	if m <= last.From {
		// The last step starts no earlier than a new one could: no writer
		// can have placed an event by it yet, for the same reason it could
		// not by a new step, so it is raised in place.
		step.From = last.From
		return append(sched[:len(sched)-1:len(sched)-1], step)
	}
	return append(sched[:len(sched):len(sched)], step)
}
