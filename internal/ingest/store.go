package ingest

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/shardline/shardline/internal/cloudevent"
	"github.com/shardline/shardline/internal/item"
	"github.com/shardline/shardline/internal/pace"
	"github.com/shardline/shardline/internal/shardmap"
	"github.com/shardline/shardline/internal/writer"
	"github.com/shardline/shardline/pkg/bucketing"
)

// unit is one thing to store: a valid event, or a rejected record for the
// quarantine. group ties it to what the caller reports on (a Kinesis record,
// an event's index in a request).
type unit struct {
	event    *cloudevent.Event
	rejected *item.Rejected
	group    int
	origin   item.Origin // where it came from, should it need quarantining
	received time.Time   // when it was received, likewise
	// known: an earlier invocation stored it (redeliveries). It is not
	// written again, but adaptive sharding still sees it, as it sees
	// every record of the batch.
	known bool
	day   int64 // the day number of its placement, set by place
}

// placed is where u is written: its stream and the time that places it in
// the stream's schedule (an event's source and time, or the quarantine and
// when the rejected record was received).
func (u *unit) placed() (bucketing.Stream, time.Time) {
	if u.event != nil {
		return bucketing.Stream{Space: bucketing.Events, Source: u.event.Source}, u.event.Time
	}
	return bucketing.Stream{Space: bucketing.Quarantine}, u.rejected.ReceivedAt
}

// place sets u's day, the one date computation a unit needs (placed
// itself is a few field reads).
func (u *unit) place() {
	_, at := u.placed()
	u.day = dayNumber(at)
}

// quarantine turns u's event, which DynamoDB refused, into a rejected
// record with the refusal as its reason, placed in the quarantine.
func (u *unit) quarantine(refusal error) {
	u.rejected = &item.Rejected{
		ReceivedAt: u.received,
		Reason:     fmt.Sprintf("event: storage refused it: %v", refusal),
		Raw:        []byte(u.event.JSON),
		Origin:     u.origin,
	}
	u.event = nil
	u.place()
}

// rejectedUnit is the unit of a record that cannot be ingested.
func rejectedUnit(group int, raw []byte, reason string, o item.Origin, received time.Time) unit {
	return unit{group: group, origin: o, received: received,
		rejected: &item.Rejected{ReceivedAt: received, Reason: reason, Raw: raw, Origin: o}}
}

// outcome is what became of a unit.
type outcome uint8

const (
	failed      outcome = iota // not stored; the caller must retry
	stored                     // the event is in the table
	quarantined                // the record is in the quarantine
)

// storeStats sums up a store call, for logs and metrics.
type storeStats struct {
	requests      int
	retried       int
	wcu           float64
	firstErr      error
	alreadyStored int // Kinesis records known stored in an earlier batch, not written again
}

// batch is what one store call writes: its units, what became of each,
// and the pass under way, whose items[n] is the item of units[idx[n]].
type batch struct {
	units   []unit
	inOrder bool // the units are a Kinesis shard's records, in order
	out     []outcome
	items   []item.Item
	idx     []int
	built   time.Time // when the pass's items were built: their GSI keys are the GSI counts in effect then
}

// newBatch is a batch of units, each placed (unit.place).
func newBatch(units []unit, inOrder bool) *batch {
	for i := range units {
		units[i].place()
	}
	return &batch{units: units, inOrder: inOrder, out: make([]outcome, len(units))}
}

// all is every unit's index: a first pass's todo.
func (b *batch) all() []int {
	todo := make([]int, len(b.units))
	for i := range todo {
		todo[i] = i
	}
	return todo
}

// store writes units: events under their keys, rejected records in the
// quarantine. An event that DynamoDB itself refuses is quarantined with the
// reason. It returns an outcome per unit. inOrder says that units are in
// the order of a Kinesis shard, where a failure makes Lambda deliver every
// later record again: retries then go to the earliest units first
// (writer.WriteInOrder).
func (h *Handler) store(ctx context.Context, units []unit, inOrder bool) ([]outcome, storeStats) {
	b := newBatch(units, inOrder)
	var st storeStats
	h.raise(ctx, b)
	todo := b.all()
	for pass := 0; pass < 2 && len(todo) > 0; pass++ {
		if err := h.build(ctx, b, todo); err != nil && st.firstErr == nil {
			st.firstErr = err
		}
		var w *watcher
		if pass == 0 {
			w = h.watch(b)
		}
		res := b.writeUnknown(ctx, h.writeFunc(inOrder), w.progress(ctx))
		w.done(res)
		st.requests += res.Requests
		st.retried += res.Retried
		st.wcu += res.WCU
		todo = b.settle(res, &st)
	}
	return b.out, st
}

// settle records what res says became of the pass's units, and returns
// the units to write again: events DynamoDB refused, now quarantined.
func (b *batch) settle(res writer.Result, st *storeStats) (requarantined []int) {
	for n, u := range b.idx {
		switch res.Status[n] {
		case writer.Stored:
			b.out[u] = stored
			if b.units[u].rejected != nil {
				b.out[u] = quarantined
			}
		case writer.Invalid:
			if b.units[u].event != nil {
				b.units[u].quarantine(res.Err[n])
				requarantined = append(requarantined, u)
				continue
			}
			fallthrough
		default:
			b.out[u] = failed
			if st.firstErr == nil {
				st.firstErr = res.Err[n]
			}
		}
	}
	return requarantined
}

// writeFunc writes items, and shows watch, when not nil, the write so far.
type writeFunc func(ctx context.Context, items []item.Item, watch func(writer.Result)) writer.Result

// writeFunc is how store writes: a Kinesis shard's records in order
// (writer.WriteInOrderWatched), an API request's all alike.
func (h *Handler) writeFunc(inOrder bool) writeFunc {
	if !inOrder {
		return func(ctx context.Context, items []item.Item, _ func(writer.Result)) writer.Result {
			return h.writer.Write(ctx, items)
		}
	}
	return func(ctx context.Context, items []item.Item, watch func(writer.Result)) writer.Result {
		return h.writer.WriteInOrderWatched(ctx, items, watchEvery, watch)
	}
}

// writeUnknown writes the pass's items of units not known to be stored
// and answers for all of them: a known unit's item is Stored, at no cost.
// watch, when not nil, is shown the write so far as write shows it, for
// all of them too.
func (b *batch) writeUnknown(ctx context.Context, write writeFunc, watch func(writer.Result)) writer.Result {
	var send []int // positions in items of what to write
	for n, u := range b.idx {
		if !b.units[u].known {
			send = append(send, n)
		}
	}
	if len(send) == len(b.items) {
		return write(ctx, b.items, watch)
	}
	part := make([]item.Item, len(send))
	for i, n := range send {
		part[i] = b.items[n]
	}
	var partial func(writer.Result)
	if watch != nil {
		partial = func(r writer.Result) { watch(widen(r, send, len(b.items))) }
	}
	return widen(write(ctx, part, partial), send, len(b.items))
}

// widen is r, the result of writing the items at positions send of n, as
// the result of all n: the others are Stored, at no cost.
func widen(r writer.Result, send []int, n int) writer.Result {
	all := writer.Result{Status: make([]writer.Status, n), Err: make([]error, n),
		Throttled: make([]bool, n), Blame: make([]pace.Blame, n), Held: make([]pace.Blame, n),
		Requests: r.Requests, Retried: r.Retried, Sent: r.Sent, Refused: r.Refused, WCU: r.WCU}
	for i := range all.Status {
		all.Status[i] = writer.Stored
	}
	for i, k := range send {
		all.Status[k], all.Err[k], all.Throttled[k], all.Blame[k], all.Held[k] = r.Status[i], r.Err[i], r.Throttled[i], r.Blame[i], r.Held[i]
	}
	return all
}

// schedKey is a (stream, day) whose shard schedule a batch needs. The day
// is a day number, not a string: a unit's is set once (place), and the
// string is only needed once per (stream, day).
type schedKey struct {
	stream bucketing.Stream
	day    int64
}

// start is when the key's day begins.
func (k schedKey) start() time.Time { return time.Unix(k.day*86400, 0).UTC() }

func dayNumber(t time.Time) int64 {
	s := t.Unix()
	if s < 0 {
		s -= 86399
	}
	return s / 86400
}

func (u *unit) schedKey() schedKey {
	stream, _ := u.placed()
	return schedKey{stream, u.day}
}

// resolved is a schedule lookup's answer.
type resolved struct {
	sched bucketing.Schedule
	err   error
}

// lookups bounds the streams whose schedules one batch looks up at once.
// A stream new today takes three requests one after another (see
// shardmap.Registry.Schedule), the first of them read ahead for the whole
// batch (readAhead), and a batch of 500 new sources is 500 of them: 64 at
// a time is eight waves, well under a second on DynamoDB.
const lookups = 64

// schedules looks up the schedule of every key, lookups streams at a time,
// after reading ahead, in bulk, what the lookups would read one by one
// (readAhead). Each lookup writes only its own slot of a slice sized
// before any starts: with a warm cache the lookups finish while others are
// still being started, so nothing they write may be shared with the loop
// that starts them.
//
// For an event stream it also marks, in the day's hour index, the hours the
// batch writes in (hours[i], the batch's events per UTC hour, for keys[i]),
// at the same time as it looks the schedule up, and before any of those
// events is written: a reader skips an hour without a marker. A stream's
// days go one after another, oldest first: a day's record is created from
// what its previous day's record and hour index say
// (shardmap.Registry.Schedule), so a batch that spans both marks the
// earlier day before it creates the later one, and the outcome does not
// depend on which lookup ran first.
func (h *Handler) schedules(ctx context.Context, keys []schedKey, hours [][24]int32) []resolved {
	out := make([]resolved, len(keys))
	byStream := map[bucketing.Stream][]int{}
	var streams []bucketing.Stream
	for i, k := range keys {
		if _, ok := byStream[k.stream]; !ok {
			streams = append(streams, k.stream)
		}
		byStream[k.stream] = append(byStream[k.stream], i)
	}
	ahead := h.readAhead(ctx, keys)
	var wg sync.WaitGroup
	sem := make(chan struct{}, lookups)
	for _, st := range streams {
		idx := byStream[st]
		sort.Slice(idx, func(a, b int) bool { return keys[idx[a]].day < keys[idx[b]].day })
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			for _, i := range idx {
				out[i] = h.schedule(ctx, keys[i], hours[i], ahead[i])
			}
		}()
	}
	wg.Wait()
	return out
}

// readAhead reads in bulk what the lookups of keys would read one by one
// (shardmap.Registry.ReadAhead: each day's record, and its previous day's
// where the day may be new, in a BatchGetItem per 100 keys rather than a
// GetItem a key, at the same read units), but for a day whose previous day
// is in keys too: the batch marks that day's hours before it creates the
// next day's record from them (schedules), so the next day reads them
// then, on its own, as before. A bulk read that fails is logged, and the
// lookups it missed read on their own: ahead[i] is keys[i]'s, or nothing.
func (h *Handler) readAhead(ctx context.Context, keys []schedKey) []shardmap.Read {
	ahead := make([]shardmap.Read, len(keys))
	inBatch := make(map[schedKey]bool, len(keys))
	for _, k := range keys {
		inBatch[k] = true
	}
	wants := make([]shardmap.Want, 0, len(keys))
	at := make([]int, 0, len(keys))
	for i, k := range keys {
		if !inBatch[schedKey{k.stream, k.day - 1}] {
			wants = append(wants, shardmap.Want{Stream: k.stream, Day: k.start().Format(bucketing.DayLayout)})
			at = append(at, i)
		}
	}
	read, err := h.registry.ReadAhead(ctx, wants)
	if err != nil {
		h.log.Warn("first-of-day reads in bulk; the setups they missed read on their own", slog.String("error", err.Error()))
	}
	for j, i := range at {
		ahead[i] = read[j]
	}
	return ahead
}

// schedule sets k up for the batch, two steps at once: its schedule
// (shardmap.Registry.ScheduleRead, with what readAhead read of it, which
// takes the registry's NewDay, the catalogue entry, before it creates a
// new day's record) and, for an event stream, the hour marks of its day
// (mark).
func (h *Handler) schedule(ctx context.Context, k schedKey, hours [24]int32, ahead shardmap.Read) resolved {
	day := k.start().Format(bucketing.DayLayout)
	var markErr error
	var wg sync.WaitGroup
	if k.stream.Space == bucketing.Events {
		wg.Add(1)
		go func() {
			defer wg.Done()
			markErr = h.mark(ctx, k, day, hours)
		}()
	}
	s, err := h.registry.ScheduleRead(ctx, k.stream, day, ahead)
	wg.Wait()
	if err != nil {
		return resolved{nil, fmt.Errorf("shard schedule of %s on %s: %w", k.stream.MetaPK(day), day, err)}
	}
	return resolved{s, markErr}
}

// mark writes the hour index's marks of the hours of k's day that the
// batch writes in (shardmap.Hours.Mark), and, for a source this container
// writes busily now, the next hour's ahead of time (shardmap.Hours.Ahead).
func (h *Handler) mark(ctx context.Context, k schedKey, day string, hours [24]int32) error {
	if err := h.hours.Mark(ctx, k.stream, day, hours); err != nil {
		return err
	}
	if now := h.now(); k.day == dayNumber(now) && hours[now.UTC().Hour()] > 0 {
		if err := h.hours.Ahead(ctx, k.stream, now); err != nil {
			// The hour is marked when it comes, as without Ahead.
			h.log.Warn("mark the next hour ahead", slog.String("error", err.Error()))
		}
	}
	return nil
}

// build builds the pass's items for b.units[todo], resolving the shard
// schedule of every (stream, day) involved (setUp); b.idx maps each item
// back to its unit. Units whose schedule cannot be read, or whose setup did
// not finish in its share of the time, are left out (and so stay failed,
// for the caller to report); err is the first such error.
func (h *Handler) build(ctx context.Context, b *batch, todo []int) (err error) {
	units := b.units
	slot := map[schedKey]int{}
	var keys []schedKey
	var hours [][24]int32
	slots := make([]int, len(todo)) // each unit's key's slot: the map is asked once a unit at most
	last := -1                      // the previous unit's slot: a batch's units mostly share a key
	for n, u := range todo {
		k := units[u].schedKey()
		i := last
		if i < 0 || keys[i] != k {
			var ok bool
			if i, ok = slot[k]; !ok {
				i = len(keys)
				slot[k] = i
				keys = append(keys, k)
				hours = append(hours, [24]int32{})
			}
			last = i
		}
		slots[n] = i
		if e := units[u].event; e != nil {
			hours[i][e.Time.UTC().Hour()]++
		}
	}
	res := h.setUp(ctx, keys, hours)
	now := h.now()
	// One batch's keys and values in a few allocations, its items and
	// their indexes sized once rather than grown by doubling.
	var arena item.Arena
	items, idx := make([]item.Item, 0, len(todo)), make([]int, 0, len(todo))
	for n, u := range todo {
		k := keys[slots[n]]
		r := res[slots[n]]
		if r.err != nil {
			if err == nil {
				err = r.err
			}
			continue
		}
		if e := units[u].event; e != nil {
			items = append(items, arena.Event(*e, shardmap.InEffect(r.sched, k.start(), e.Time, now), h.cfg.Retention))
		} else {
			rj := units[u].rejected
			items = append(items, item.Quarantine(*rj, r.sched.At(rj.ReceivedAt), h.cfg.Retention))
		}
		idx = append(idx, u)
	}
	b.items, b.idx, b.built = items, idx, now
	return err
}
