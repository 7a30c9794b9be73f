package ingest

import (
	"context"
	"log/slog"
	"strings"
	"time"

	"github.com/shardline/shardline/internal/adapt"
	"github.com/shardline/shardline/internal/emf"
	"github.com/shardline/shardline/internal/item"
	"github.com/shardline/shardline/internal/pace"
	"github.com/shardline/shardline/internal/schema"
	"github.com/shardline/shardline/internal/shardmap"
	"github.com/shardline/shardline/internal/writer"
	"github.com/shardline/shardline/pkg/bucketing"
)

// watchEvery is how often a long write shows the policy what it has done
// so far (writer.WriteInOrderWatched): several times a decision window.
const watchEvery = 2 * time.Second

// watcher feeds the policy what a write shows of each source writing
// today (adaptive sharding, internal/adapt), as it goes and when it ends:
// items[n] is the item of units[idx[n]]. inOrder says the units are a
// Kinesis shard's records, in arrival order: then the policy keeps a
// window per (source, shard), since a warm container may serve several
// shards; what the source offers is read from the records' arrival times,
// stored or not, and how far the writer got through its events is the
// newest of those stored before the first record not stored (where the
// mapping resumes: the records after it come again).
//
// Only items placed under the counts in effect now count: they are what
// those counts carry. An event of another day is not today's heat, and an
// event stamped before the last raise took effect (a backlog built while
// the source was throttled) stays on the old keys whatever is raised next:
// its throttling must not ask for more shards, or a long backlog would
// push every count it meets to the maximum.
type watcher struct {
	h       *Handler
	b       *batch
	units   []unit
	idx     []int
	items   []item.Item
	inOrder bool
	last    time.Time // when the policy was last shown the write (or it began)
	offered bool      // the records' arrivals have been shown
	// stored, throttled and held mark the items the policy has been shown
	// stored, throttled, and held back by the pacer.
	stored, throttled, held []bool
}

// watch is a watcher of the write of b's pass that begins now; nil when
// adaptive sharding is off.
func (h *Handler) watch(b *batch) *watcher {
	if h.policy == nil || len(b.items) == 0 {
		return nil
	}
	n := len(b.items)
	return &watcher{h: h, b: b, units: b.units, idx: b.idx, items: b.items, inOrder: b.inOrder, last: h.now(),
		stored: make([]bool, n), throttled: make([]bool, n), held: make([]bool, n)}
}

// progress is what a Kinesis shard's write shows w as it goes: the policy
// sees what its keys took, and may raise before the write ends. Nil
// without a watcher, and for an API request, whose write is short.
func (w *watcher) progress(ctx context.Context) func(writer.Result) {
	if w == nil || !w.inOrder {
		return nil
	}
	return func(so writer.Result) {
		w.observe(so, false)
		w.h.raise(ctx, w.b)
	}
}

// done shows the policy the whole write, res.
func (w *watcher) done(res writer.Result) { w.observe(res, true) }

// observe shows the policy what res, the write so far (or, when done, all
// of it), shows that it has not been shown: the items stored and
// throttled since, spread over the time since it was last shown, and
// when done, the items that were not stored.
func (w *watcher) observe(res writer.Result, done bool) {
	if w == nil {
		return
	}
	h := w.h
	now := h.now()
	o := &observation{h: h, now: now, today: dayNumber(now), start: dayStart(now), day: now.UTC().Format(bucketing.DayLayout),
		inOrder: w.inOrder, sources: map[sourceKey]*seen{}}
	w.tally(o, res, done)
	w.offered = true
	for _, s := range o.sources {
		if s.sample.Items > 0 || s.sample.Offered > 0 || s.sample.Elsewhere > 0 {
			s.sample.Began = w.last
			h.policy.Observe(s.key, now, s.cur, s.sample)
		}
	}
	w.last = now
	if sec := now.Unix(); sec-h.forgot.Load() >= 60 {
		h.forgot.Store(sec)
		h.policy.Forget(now)
	}
}

// tally adds to o, source by source, what res shows of each item that the
// policy has not been shown.
func (w *watcher) tally(o *observation, res writer.Result, done bool) {
	resume := resumeAt(w.units, w.idx, res)
	for n, u := range w.idx {
		s := o.seen(&w.units[u])
		if s == nil {
			continue
		}
		unit := &w.units[u]
		if !w.offered && w.inOrder && unit.received.After(s.since) {
			s.offer(unit.received, float64(itemWCU(w.items[n])))
		}
		if !s.counts(unit) {
			if !w.stored[n] && (res.Status[n] == writer.Stored || done) {
				w.stored[n] = true
				s.elsewhere(w.items[n], res.Status[n] == writer.Stored, w.b.built)
			}
			continue
		}
		if res.Throttled[n] && !w.throttled[n] {
			w.throttled[n] = true
			s.throttle(res.Blame[n])
		}
		if res.Held[n] != 0 && !w.held[n] {
			w.held[n] = true
			s.hold(res.Held[n])
		}
		switch {
		case w.stored[n]:
		case res.Status[n] == writer.Stored:
			w.stored[n] = true
			s.store(unit, u < resume && w.inOrder, w.items[n])
		case done:
			s.sample.Items++ // tried, and not stored: held back by its key's pace, or failed
		}
	}
}

// resumeAt is the first unit not stored: Lambda delivers it again, and
// every unit after it.
func resumeAt(units []unit, idx []int, res writer.Result) int {
	stored := make([]bool, len(units))
	for n, u := range idx {
		stored[u] = res.Status[n] == writer.Stored
	}
	for u := range units {
		if !stored[u] {
			return u
		}
	}
	return len(units)
}

// observation is what one look at a write shows, by source (and Kinesis
// shard).
type observation struct {
	h          *Handler
	now, start time.Time
	today      int64
	day        string
	inOrder    bool
	sources    map[sourceKey]*seen
	lastKey    sourceKey // the previous unit's, whose entry is last: units mostly share a key
	last       *seen
}

// sourceKey is a policy window's key by its parts: policyKey builds a
// string, which only a new entry pays for.
type sourceKey struct{ source, shard string }

// seen is what a write showed of one source (and Kinesis shard).
type seen struct {
	key    string // policyKey
	cur    adapt.Counts
	sched  bucketing.Schedule
	sample adapt.Sample
	since  time.Time // how far the writer had got through its arrivals (adapt.Policy.Arrived)
}

// seen is the entry of u's source, or nil when u does not count: it is
// not today's, or its source's schedule is not known.
func (o *observation) seen(u *unit) *seen {
	if u.day != o.today {
		return nil
	}
	stream, _ := u.placed()
	sk := sourceKey{source: stream.Source}
	if o.inOrder {
		sk.shard = u.origin.ShardID
	}
	if o.last != nil && sk == o.lastKey {
		return o.last
	}
	s := o.sources[sk]
	if s == nil {
		// The batch's items were built from this schedule a moment ago:
		// the registry answers from its cache.
		sched, ok := o.h.registry.Known(stream, o.day)
		if !ok {
			return nil
		}
		key := policyKey(stream.Source, *u, o.inOrder)
		s = &seen{key: key, cur: adapt.Of(shardmap.InEffect(sched, o.start, o.now, o.now)), sched: sched, since: o.h.policy.Arrived(key)}
		o.sources[sk] = s
	}
	o.lastKey, o.last = sk, s
	return s
}

// counts says whether u's item counts in the sample: placed under the
// table count in effect (its GSI count is the one in effect).
func (s *seen) counts(u *unit) bool {
	_, at := u.placed()
	return s.sched.At(at).Shards == s.cur.Shards
}

// elsewhere counts an item placed on older table keys, built at built:
// the table's keys in effect did not take it, but when stored and placed
// on the GSI count in effect (InEffect's GSI count is that of when the
// item was built, whatever its time), the GSI's keys in effect did.
func (s *seen) elsewhere(it item.Item, stored bool, built time.Time) {
	s.sample.Elsewhere++
	if _, copied := it.Attrs[schema.GSIPK]; !copied || !stored {
		return
	}
	if day := dayStart(built); shardmap.InEffect(s.sched, day, built, built).GSIShards == s.cur.GSIShards {
		s.sample.ElsewhereGSIWCU += float64(itemWCU(it))
	}
}

// throttle counts an item throttled, its throttling laid on its table key,
// its GSI key or both.
func (s *seen) throttle(blame pace.Blame) {
	s.sample.Throttled++
	if blame&pace.Table != 0 {
		s.sample.TableThrottled++
	}
	if blame&pace.GSI != 0 {
		s.sample.GSIThrottled++
	}
}

// hold counts an item the pacer held back, for its table key's pace, its
// GSI key's or both.
func (s *seen) hold(by pace.Blame) {
	if by&pace.Table != 0 {
		s.sample.TableHeld++
	}
	if by&pace.GSI != 0 {
		s.sample.GSIHeld++
	}
}

// store counts u's item it stored; ahead says it lies before where the
// shard resumes, so that the writer has got through it. How far it got is
// the record's arrival time, not the event's own: a source that stamps its
// events to the minute, or many with one time, would otherwise look as if
// its writer got nowhere in a minute (adapt.MaxOver times behind).
func (s *seen) store(u *unit, ahead bool, it item.Item) {
	w := float64(itemWCU(it))
	s.sample.Items++
	s.sample.Stored++
	if ahead && u.received.After(s.sample.Latest) {
		s.sample.Latest = u.received
	}
	s.sample.WCU += w
	if _, copied := it.Attrs[schema.GSIPK]; copied {
		// A rejected record, or an event of a day without GSI copies,
		// has none: its GSI demand stays 0, and its GSI count is never
		// raised.
		s.sample.GSIWCU += w
	}
}

// offer counts w write units offered that arrived at arrival, past where
// the writer had got through the source's arrivals. The first arrival of
// a source new to the writer, or back after a pause of a window or more,
// starts the span.
func (s *seen) offer(arrival time.Time, w float64) {
	if s.sample.Since.IsZero() {
		s.sample.Since = s.since
		if s.since.IsZero() || arrival.Sub(s.since) > adapt.DefaultWindow {
			s.sample.Since = arrival
		}
	}
	s.sample.Offered += w
	if arrival.After(s.sample.Arrived) {
		s.sample.Arrived = arrival
	}
}

// policyKey is what the policy keeps a window for: a source, or for a
// Kinesis shard's records a (source, shard).
func policyKey(source string, u unit, inOrder bool) string {
	if !inOrder {
		return source
	}
	return source + "\x00" + u.origin.ShardID
}

// raise records the raises the policy asks for, for the sources of units
// writing today. It runs before a batch is written, on what earlier
// batches showed: after a write throttled to its deadline there is no time
// left to record anything, and a raise is what ends such writes.
//
// A raise is one conditional write to the shard record, made at most once
// per doubling of a count, so it may sit on the hot path. A failed raise
// is logged and left for the next batch: the events are written either way.
func (h *Handler) raise(ctx context.Context, b *batch) {
	if h.policy == nil {
		return
	}
	now := h.now()
	today := dayNumber(now)
	day := now.UTC().Format(bucketing.DayLayout)
	done := map[bucketing.Stream]bool{}
	for _, u := range b.units {
		stream, _ := u.placed()
		if done[stream] || u.day != today {
			continue
		}
		done[stream] = true
		sched, ok := h.registry.Known(stream, day)
		if !ok {
			continue
		}
		cur, last := adapt.Of(shardmap.InEffect(sched, dayStart(now), now, now)), adapt.Of(sched.Last())
		raises := shardmap.Raised(sched, dayStart(now), now)
		d, ok := h.decide(ctx, stream, day, policyKey(stream.Source, u, b.inOrder), now, cur, last, raises)
		if !ok {
			continue
		}
		next, raised, err := h.registry.RaiseUnlessCovered(ctx, stream, day,
			bucketing.Step{Shards: d.To.Shards, GSIShards: d.To.GSIShards},
			bucketing.Step{Shards: d.Cover.Shards, GSIShards: d.Cover.GSIShards})
		if err != nil {
			h.log.Warn("adaptive sharding: raise", streamAttr(stream), slog.String("error", err.Error()))
			continue
		}
		if !raised {
			continue // another container raised first, or the day is ending
		}
		step := next.Last()
		h.log.Info("shards raised",
			streamAttr(stream),
			slog.String("day", day),
			slog.Int("shards_from", last.Shards), slog.Int("shards_to", step.Shards),
			slog.Int("gsi_shards_from", last.GSIShards), slog.Int("gsi_shards_to", step.GSIShards),
			slog.Time("effective", dayStart(now).Add(time.Duration(step.From)*time.Minute)),
			slog.String("reason", d.Reason))
		if err := h.metrics.Put(now,
			emf.Metric{Name: "ShardRaises", Value: 1, Unit: "Count"},
			emf.Metric{Name: "RaisedShards", Value: float64(step.Shards), Unit: "Count"},
			emf.Metric{Name: "RaisedGSIShards", Value: float64(step.GSIShards), Unit: "Count"},
		); err != nil {
			h.log.Warn("metrics", slog.String("error", err.Error()))
		}
	}
}

// decide asks the policy whether stream needs a raise. A source that
// throttles, or runs near its keys, is measured, the measure reported
// beside the day's shard record with the other writers' (shardmap.Demand),
// and decided on their sum from this writer's second report on: each
// writer sees only its share (a source spread over four Kinesis shards
// looks a quarter as hot to each), and the others need as long as it to
// report theirs. A failed report is logged and the decision left for a
// later batch. The writer does not read an index of the sum as refusing
// while adapt.Held says so of the raises in the day's schedule (raises):
// within adapt.AfterRaise of that index's last raise taking effect, or
// adapt.Settle of the other's, what its keys took is not their ceiling;
// nor while the other index's raise is on its way (adapt.Awaited).
// Since every writer reads the same schedule, each reports what its
// pacer blamed, and the sum still says which index holds the writers
// (adapt.FewerKeys). Nor does it decide on a refusal while the writer
// furthest behind (the sum's Behind) has not got adapt.Settle past the
// table's last raise in the source's arrivals (adapt.Settled): that
// writer still drains events placed on the old table keys, and what it
// took of the keys in effect is not theirs.
func (h *Handler) decide(ctx context.Context, s bucketing.Stream, day, key string, now time.Time, cur, last adapt.Counts, raises shardmap.Raises) (adapt.Decision, bool) {
	own, ok := h.policy.Measure(key, now, cur)
	if !ok {
		return adapt.Decision{}, false
	}
	// A writer is a container's view of a source through one shard.
	writerID := h.writerID
	if i := strings.IndexByte(key, 0); i >= 0 {
		writerID += "/" + key[i+1:]
	}
	sum, err := h.demand.Report(ctx, s, day, writerID, own.Measure, now)
	if err != nil {
		h.log.Warn("adaptive sharding: report demand", streamAttr(s), slog.String("error", err.Error()))
		return adapt.Decision{}, false
	}
	h.log.Debug("adaptive sharding: demand reported", streamAttr(s),
		slog.Float64("wcu", own.Table), slog.Float64("gsi_wcu", own.GSI), slog.Bool("throttled", own.Throttled),
		slog.Float64("took_wcu", own.Took.Table), slog.Float64("took_gsi_wcu", own.Took.GSI), slog.Int("refused", int(own.Refused)),
		slog.Float64("sum_wcu", sum.Table), slog.Float64("sum_gsi_wcu", sum.GSI),
		slog.Float64("sum_took_wcu", sum.Took.Table), slog.Float64("sum_took_gsi_wcu", sum.Took.GSI), slog.Int("writers", sum.Writers))
	if !sum.ReportedBefore {
		return adapt.Decision{}, false
	}
	// An index held after a raise is left out once the sum's refusals
	// are read (FewerKeys): held, it still says which keys hold the
	// writers back.
	sum.Refused = adapt.FewerKeys(sum.Refused, cur) &^ adapt.Held(raises, now) &^ adapt.Awaited(cur, last)
	if !adapt.Settled(raises.Table, now, sum.Behind) {
		sum.Refused = 0 // a writer is still draining events placed before the table's raise
	}
	return h.policy.ForDemand(s.Source, now, cur, last, sum.Measure, sum.Writers, own.Throttled)
}

// streamAttr names a stream in a log line: its source, or the quarantine.
func streamAttr(s bucketing.Stream) slog.Attr {
	if s.Space == bucketing.Quarantine {
		return slog.Bool("quarantine", true)
	}
	return slog.String("event_source", s.Source)
}

// itemWCU is what writing it costs (item.WriteUnits). The GSI copy of an
// event is priced the same (the full projection; a lean one costs less,
// so the policy then errs towards more GSI shards).
func itemWCU(it item.Item) int { return item.WriteUnits(item.Bytes(it.Attrs)) }

func dayStart(t time.Time) time.Time { return t.UTC().Truncate(24 * time.Hour) }
