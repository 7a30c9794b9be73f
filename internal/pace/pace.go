// Package pace spaces a writer's requests to the DynamoDB partition keys
// that throttled it, so that retries go at the rate a key takes instead of
// being re-sent blind. docs/adaptive.md ("Pacing") says how a key's pace is
// cut and grown, why per key, and which key a throttle is blamed on.
package pace

import (
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shardline/shardline/pkg/bucketing"
)

// Defaults of the pacing rule.
const (
	// Cut is what a throttle leaves of a key's rate: half, as TCP halves
	// its window (on the partition model, halving keeps four writers on
	// one key under 5 % refused at its full ceiling; 0.7 let 7 % through).
	Cut = 0.5
	// Growth is how fast a limit grows back: by a tenth of itself a
	// second, compounding, so that a limit halved is back where it was cut
	// in about seven seconds, whatever the key takes.
	Growth = 0.1
	// Lift is what a limit grows by besides, in nominal ceilings a second
	// (10 WCU/s a second of DynamoDB's 1,000): a limit cut to almost
	// nothing by a run of throttles still grows back.
	Lift = 0.01
	// First is the first limit of a key that throttled, in ceilings:
	// several writers usually share a hot key, and each learns its part.
	First = 0.25
	// Drop is the limit, in ceilings, past which a key is no longer paced:
	// it grew there without a throttle, so it is no longer hot.
	Drop = 2
	// Burst is how long a quiet limited key saves up its rate, and what
	// an item it holds back waits for: the key is written again once it
	// has saved Burst's worth, in one request, not as soon as it has a
	// token, an item a request. The same write units a second go in
	// fewer requests (in the ingest simulations, about half as many).
	Burst = 200 * time.Millisecond
	// Forget is how long a key's pace outlives its last write or throttle,
	// by the pacer's clock: a key no longer written (its source went
	// quiet, or a raise spread it over other keys) is forgotten then, and
	// once every key is, Paced is false again.
	Forget = 2 * time.Minute
)

// sweepEvery bounds how often Paced looks for keys to forget: a key goes
// between Forget and Forget+sweepEvery after its last write.
const sweepEvery = 10 * time.Second

// Key is an item's partition keys: the table's and, when the item has an
// entry in it, the GSI's.
type Key struct {
	Table, GSI string
}

// Blame says which of an item's keys a throttle is laid on.
type Blame uint8

// Blames.
const (
	None  Blame = 0
	Table Blame = 1 << iota
	GSI
)

// Pacer paces writes per partition key. The zero value is ready to use;
// it is safe for concurrent use.
type Pacer struct {
	// KeyWCU is a key's ceiling in write units a second; default
	// bucketing.PartitionWCU. A test that scales the ceiling down scales
	// this with it.
	KeyWCU float64
	// Now is the pacer's clock; default time.Now.
	Now func() time.Time
	// Family, when set, names the family of a key: keys alike, such as
	// the shards of one index of one source. A key that is not paced
	// while one of its family is starts paced as that one is, and a key
	// that throttles first starts at its family's pace: when a raise
	// spreads a hot source over new keys, they are not sent a whole
	// backlog at once to learn what they take. Nil: every key is its own.
	Family func(key string) string

	n       atomic.Int32 // len(keys): the fast path reads it without the lock
	sweepAt atomic.Int64 // by the clock, Unix ns: when Paced next looks for keys to forget
	mu      sync.Mutex
	keys    map[slot]*limit
	fams    map[slot]*limit // by family: the limit of its key last cut
}

// slot names a key in the pacer: the same string may be a table key and a
// GSI key.
type slot struct {
	gsi bool
	key string
}

// limit is a key's pace: rate(t) = base·(1+Growth)^(t - cut) + a Lift, tokens
// spent against it. It grows by a share of itself, not by a share of the
// key's ceiling, which is not known: a key that takes a quarter of the
// nominal figure, and a writer that gets a quarter of a key, are paced
// alike.
type limit struct {
	key    slot
	base   float64   // write units a second right after the last cut
	cut    time.Time // when it was last cut
	tokens float64   // may go below zero: an item takes what it needs
	at     time.Time // when tokens were last brought up to date
	used   time.Time // when it was last written (Admit) or throttled
}

func (p *Pacer) keyWCU() float64 {
	if p.KeyWCU > 0 {
		return p.KeyWCU
	}
	return bucketing.PartitionWCU
}

// Time is the pacer's clock now; a nil pacer's is the wall clock.
func (p *Pacer) Time() time.Time { return p.now() }

func (p *Pacer) now() time.Time {
	if p != nil && p.Now != nil {
		return p.Now()
	}
	return time.Now()
}

func (p *Pacer) rate(l *limit, t time.Time) float64 {
	dt := max(0, t.Sub(l.cut).Seconds())
	return l.base*math.Exp(growth*dt) + Lift*p.keyWCU()*dt
}

// growth is Growth a second, compounded continuously.
var growth = math.Log1p(Growth)

// refill brings l's tokens up to t and says whether l has grown past Drop.
func (p *Pacer) refill(l *limit, t time.Time) (dropped bool) {
	r := p.rate(l, t)
	if r >= Drop*p.keyWCU() {
		return true
	}
	if dt := t.Sub(l.at).Seconds(); dt > 0 {
		l.tokens = math.Min(r*Burst.Seconds(), l.tokens+dt*r)
		l.at = t
	}
	return false
}

// Paced says whether any key is being paced now. While one is, it reads
// the clock, and now and then forgets the keys idle for Forget (sweep).
func (p *Pacer) Paced() bool {
	if p == nil || p.n.Load() == 0 {
		return false
	}
	if p.now().UnixNano() < p.sweepAt.Load() {
		return true
	}
	return p.sweep()
}

// count publishes how many keys are paced, and when none were, when to
// look for keys to forget. The lock is held.
func (p *Pacer) count(now time.Time) {
	if p.n.Swap(int32(len(p.keys))) == 0 && len(p.keys) > 0 {
		p.sweepAt.Store(now.Add(Forget).UnixNano())
	}
}

// sweep forgets the keys not written or throttled for Forget, and those
// grown past Drop; a family whose pace was one of them takes the pace of
// its key cut last that is still paced, so that a key new to a hot family
// still starts paced. It says whether any key is still paced.
func (p *Pacer) sweep() bool {
	now := p.now()
	p.mu.Lock()
	defer p.mu.Unlock()
	next := now.Add(Forget)
	orphans := map[slot]bool{}
	for k, l := range p.keys {
		if now.Sub(l.used) < Forget && !p.refill(l, now) {
			if at := l.used.Add(Forget); at.Before(next) {
				next = at
			}
			continue
		}
		delete(p.keys, k)
		if f := p.family(k); p.fams[f] == l {
			delete(p.fams, f)
			orphans[f] = true
		}
	}
	for k, l := range p.keys {
		if f := p.family(k); orphans[f] && (p.fams[f] == nil || p.fams[f].cut.Before(l.cut)) {
			p.fams[f] = l
		}
	}
	p.n.Store(int32(len(p.keys)))
	p.sweepAt.Store(max(next.UnixNano(), now.Add(sweepEvery).UnixNano()))
	return len(p.keys) > 0
}

// Admit decides which items may be sent now: ok[i] for keys[i], which
// costs wcu[i] write units. The tokens of admitted items are taken. When
// none is admitted, wait is how long until the first held item's keys have
// saved Burst's worth again (see Burst). Items go in the order given, so
// that the first of a paced key go first.
func (p *Pacer) Admit(keys []Key, wcu []float64) (ok []bool, wait time.Duration) {
	held, wait := p.Hold(keys, wcu)
	ok = make([]bool, len(keys))
	for i, b := range held {
		ok[i] = b == None
	}
	return ok, wait
}

// Hold is Admit that says, of each item it holds back, which of its keys'
// paces holds it: None for an item admitted. An item held for its table
// key's pace was refused for the table as surely as one DynamoDB
// throttled, without a request: adaptive sharding counts it so.
func (p *Pacer) Hold(keys []Key, wcu []float64) (held []Blame, wait time.Duration) {
	held = make([]Blame, len(keys))
	if !p.Paced() {
		return held, 0
	}
	now := p.now()
	p.mu.Lock()
	defer p.mu.Unlock()
	wait = time.Duration(math.MaxInt64)
	any := false
	for i, k := range keys {
		lt, lg := p.adopt(slot{false, k.Table}, now), p.adopt(slot{true, k.GSI}, now)
		for _, l := range []*limit{lt, lg} {
			if l != nil {
				l.used = now
			}
		}
		if et, eg := empty(lt), empty(lg); et || eg {
			wait = min(wait, max(p.full(lt, now), p.full(lg, now)))
			if et {
				held[i] |= Table
			}
			if eg {
				held[i] |= GSI
			}
			continue
		}
		any = true
		for _, l := range []*limit{lt, lg} {
			if l != nil {
				l.tokens -= wcu[i]
			}
		}
	}
	if any {
		wait = 0
	}
	return held, wait
}

// live is key's limit, brought up to now, or nil when key is not paced.
// The lock is held.
func (p *Pacer) live(key slot, now time.Time) *limit {
	if key.key == "" {
		return nil
	}
	l := p.keys[key]
	if l != nil && p.refill(l, now) {
		delete(p.keys, key)
		if f := p.family(key); p.fams[f] == l {
			delete(p.fams, f)
		}
		p.n.Store(int32(len(p.keys)))
		return nil
	}
	return l
}

// adopt is live, or for a key not paced whose family is, a limit at the
// family's pace. The lock is held.
func (p *Pacer) adopt(key slot, now time.Time) *limit {
	if l := p.live(key, now); l != nil || key.key == "" {
		return l
	}
	f := p.family(key)
	kin := p.fams[f]
	if kin == nil || p.live(kin.key, now) != kin {
		return nil
	}
	r := p.rate(kin, now)
	l := &limit{key: key, base: r, cut: now, at: now, used: now, tokens: r * Burst.Seconds()}
	p.keys[key] = l
	p.count(now)
	return l
}

// family is key's family as a slot; a key of no family is its own.
func (p *Pacer) family(key slot) slot {
	if p.Family == nil {
		return key
	}
	return slot{key.gsi, p.Family(key.key)}
}

// empty says whether l holds items back: it has no token left. A nil l
// holds nothing.
func empty(l *limit) bool { return l != nil && l.tokens <= 0 }

// full is how long until l has saved Burst's worth of tokens, its most: how
// long an item l holds waits. 0 when l is full, or nil.
func (p *Pacer) full(l *limit, now time.Time) time.Duration {
	if l == nil {
		return 0
	}
	r := p.rate(l, now)
	gap := r*Burst.Seconds() - l.tokens
	if gap <= 0 {
		return 0
	}
	return time.Duration((gap + 1e-3) / r * float64(time.Second))
}

// Throttled reports the items of one request DynamoDB throttled: keys[i]
// of the request's items, throttled[i] for those it refused, the request
// sent at sent (by the pacer's clock). It lays each throttle on the key the
// request sent the most items to, cuts that key's rate, and returns, per
// item, which of its keys it blamed.
func (p *Pacer) Throttled(sent time.Time, keys []Key, throttled []bool) []Blame {
	blame := make([]Blame, len(keys))
	n := map[string]int{}
	hit := false
	for i, k := range keys {
		n[k.Table]++
		if k.GSI != "" {
			n[k.GSI]++
		}
		hit = hit || throttled[i]
	}
	if !hit {
		return blame
	}
	now := p.now()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.keys == nil {
		p.keys = map[slot]*limit{}
	}
	for i, k := range keys {
		if !throttled[i] {
			continue
		}
		nt, ng := n[k.Table], n[k.GSI]
		if k.GSI != "" && nt == ng {
			// A tie goes to the key already paced, the one known to be
			// hot: a paced request of one item leans on neither.
			_, pt := p.keys[slot{false, k.Table}]
			_, pg := p.keys[slot{true, k.GSI}]
			if pt != pg {
				nt, ng = nt+b2i(pt), ng+b2i(pg)
			}
		}
		if k.GSI == "" || nt >= ng {
			blame[i] |= Table
			p.cut(slot{false, k.Table}, sent, now)
		}
		if k.GSI != "" && ng >= nt {
			blame[i] |= GSI
			p.cut(slot{true, k.GSI}, sent, now)
		}
	}
	p.count(now)
	return blame
}

// cut lowers key's rate after a throttle of a request sent at sent. The
// lock is held.
func (p *Pacer) cut(key slot, sent, now time.Time) {
	if p.fams == nil {
		p.fams = map[slot]*limit{}
	}
	f := p.family(key)
	l := p.keys[key]
	if l == nil {
		// A key's first pace is its family's, if another of its family
		// is paced; else First of the nominal figure.
		first := First * p.keyWCU()
		if kin := p.fams[f]; kin != nil {
			first = min(first, p.rate(kin, now))
		}
		l = &limit{key: key, base: first, cut: now, at: now, used: now}
		p.keys[key], p.fams[f] = l, l
		return
	}
	l.used = now
	if sent.Before(l.cut) {
		return // sent under the rate before the last cut: already answered
	}
	p.refill(l, now)
	l.base, l.cut = Cut*p.rate(l, now), now
	p.fams[f] = l
	l.tokens = min(l.tokens, 0)
}

// Rate is the paced rate now, in write units a second, of the table key
// (gsi false) or GSI key named key, and whether that key is paced at all.
func (p *Pacer) Rate(gsi bool, key string) (float64, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	l := p.keys[slot{gsi, key}]
	if l == nil {
		return 0, false
	}
	return p.rate(l, p.now()), true
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
