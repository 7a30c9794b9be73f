// Package pace spaces a writer's requests to the DynamoDB partition keys
// that throttled it, so that retries go at the rate a key takes instead of
// being re-sent blind.
//
// A Pacer keeps a limit only for keys that DynamoDB throttled: additive
// increase, multiplicative decrease, as TCP paces a congested link. A
// throttle cuts the key's rate to Cut of what it was (once per round: a
// throttle of a request sent before the last cut says nothing new), and the
// rate then grows back by Growth of a key's ceiling a second until the next
// throttle, or until it is so far above the ceiling that the limit is
// dropped. Keys that never throttled cost one atomic load per request.
//
// Why per key and not the AWS SDK's adaptive retry mode: that mode's
// client-side rate limiter sees only throttled requests, not the items a
// BatchWriteItem leaves unprocessed (how DynamoDB throttles a batch), and it
// slows every request of the client, so one hot source would slow every
// other source in the container. A key's limit slows only the items that
// write to it.
//
// A throttled item has two partition keys, the table's and the GSI's, and
// DynamoDB does not say which one refused it. The pacer blames the key the
// request sent the most items to (both on a tie): the index whose keys each
// carry more of the request is the one that is hotter per key.
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
	// Growth is how fast a limit grows back, in ceilings per second: a
	// twentieth of a key's ceiling a second.
	Growth = 0.05
	// First is the first limit of a key that throttled, in ceilings:
	// several writers usually share a hot key, and each learns its part.
	First = 0.5
	// Drop is the limit, in ceilings, past which a key is no longer paced:
	// it grew there without a throttle, so it is no longer hot.
	Drop = 2
	// Burst is how long a quiet limited key saves up its rate.
	Burst = 200 * time.Millisecond
)

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

	n    atomic.Int32 // len(keys): the fast path reads it without the lock
	mu   sync.Mutex
	keys map[slot]*limit
}

// slot names a key in the pacer: the same string may be a table key and a
// GSI key.
type slot struct {
	gsi bool
	key string
}

// limit is a key's pace: rate(t) = base + growth·(t - cut), tokens spent
// against it.
type limit struct {
	base   float64   // write units a second right after the last cut
	cut    time.Time // when it was last cut
	tokens float64   // may go below zero: an item takes what it needs
	at     time.Time // when tokens were last brought up to date
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
	return l.base + Growth*p.keyWCU()*max(0, t.Sub(l.cut).Seconds())
}

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

// Paced says whether any key is being paced now.
func (p *Pacer) Paced() bool { return p != nil && p.n.Load() > 0 }

// Admit decides which items may be sent now: ok[i] for keys[i], which
// costs wcu[i] write units. The tokens of admitted items are taken. When
// none is admitted, wait is how long until the first could be. Items go in
// the order given, so that the first of a paced key go first.
func (p *Pacer) Admit(keys []Key, wcu []float64) (ok []bool, wait time.Duration) {
	ok = make([]bool, len(keys))
	if !p.Paced() {
		for i := range ok {
			ok[i] = true
		}
		return ok, 0
	}
	now := p.now()
	p.mu.Lock()
	defer p.mu.Unlock()
	wait = time.Duration(math.MaxInt64)
	any := false
	for i, k := range keys {
		lt, lg := p.live(slot{false, k.Table}, now), p.live(slot{true, k.GSI}, now)
		w := max(p.short(lt, now), p.short(lg, now))
		if w > 0 {
			wait = min(wait, w)
			continue
		}
		ok[i], any = true, true
		for _, l := range []*limit{lt, lg} {
			if l != nil {
				l.tokens -= wcu[i]
			}
		}
	}
	if any {
		wait = 0
	}
	return ok, wait
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
		p.n.Store(int32(len(p.keys)))
		return nil
	}
	return l
}

// short is how long until l has a token again; 0 when it has one now, or
// when l is nil.
func (p *Pacer) short(l *limit, now time.Time) time.Duration {
	if l == nil || l.tokens > 0 {
		return 0
	}
	r := p.rate(l, now)
	return time.Duration((-l.tokens + 1e-3) / r * float64(time.Second))
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
		if k.GSI == "" || nt >= ng {
			blame[i] |= Table
			p.cut(slot{false, k.Table}, sent, now)
		}
		if k.GSI != "" && ng >= nt {
			blame[i] |= GSI
			p.cut(slot{true, k.GSI}, sent, now)
		}
	}
	p.n.Store(int32(len(p.keys)))
	return blame
}

// cut lowers key's rate after a throttle of a request sent at sent. The
// lock is held.
func (p *Pacer) cut(key slot, sent, now time.Time) {
	l := p.keys[key]
	if l == nil {
		p.keys[key] = &limit{base: First * p.keyWCU(), cut: now, at: now}
		return
	}
	if sent.Before(l.cut) {
		return // sent under the rate before the last cut: already answered
	}
	p.refill(l, now)
	l.base, l.cut = Cut*p.rate(l, now), now
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
