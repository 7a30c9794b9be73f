package pace

import (
	"testing"
	"time"
)

// TestAnIdleKeyIsForgotten: a key that throttled once and is not written
// again is forgotten Forget after (and a sweep's while), and Paced turns
// false once no key is left; a key written and throttled all along stays
// paced meanwhile. Before, a throttled key that was not written again was
// never forgotten: Paced stayed true for the container's life, and every
// batch of every source took the pacer's slow path.
func TestAnIdleKeyIsForgotten(t *testing.T) {
	c := newClock()
	p := &Pacer{KeyWCU: 100, Now: c.now}
	start := c.now()
	p.Throttled(c.now(), keysOf("idle", "", 1), []bool{true})
	for c.now().Sub(start) < 5*time.Minute {
		c.add(5 * time.Second)
		p.Admit(keysOf("hot", "", 1), ones(1))
		p.Throttled(c.now(), keysOf("hot", "", 1), []bool{true})
		if !p.Paced() {
			t.Fatalf("at %v: not paced, with a key written and throttled every 5 s", c.now().Sub(start))
		}
		_, idle := p.Rate(false, "idle")
		if c.now().Sub(start) < Forget && !idle {
			t.Fatalf("at %v: the key idle since the start was forgotten before Forget (%v)", c.now().Sub(start), Forget)
		}
		if c.now().Sub(start) >= Forget+sweepEvery && idle {
			t.Fatalf("at %v: the key idle since the start is still paced", c.now().Sub(start))
		}
	}
	stopped := c.now()
	for c.now().Sub(stopped) < Forget+sweepEvery {
		c.add(time.Second)
		if !p.Paced() {
			break
		}
	}
	if p.Paced() {
		t.Fatalf("%v after the last key's last write, Paced is still true", c.now().Sub(stopped))
	}
	if _, paced := p.Rate(false, "hot"); paced {
		t.Fatalf("the hot key is still paced %v after its last write", c.now().Sub(stopped))
	}
}

// TestForgettingKeepsAFamilysPace: a family's pace is that of its key cut
// last. When that key is forgotten (no longer written: a raise spread the
// source over other keys), the family keeps the pace of its key cut last
// that is still paced, and a key new to the family starts at it.
func TestForgettingKeepsAFamilysPace(t *testing.T) {
	c := newClock()
	p := &Pacer{KeyWCU: 100, Now: c.now, Family: func(k string) string { return k[:len(k)-2] }}
	for range 20 { // a run of throttles: a pace near nothing, which takes minutes to grow back
		p.Throttled(c.now(), keysOf("t#1", "g#1", 1), []bool{true})
	}
	p.Throttled(c.now(), keysOf("t#0", "g#0", 1), []bool{true}) // cut last, then never written
	start := c.now()
	for c.now().Sub(start) <= Forget+sweepEvery {
		c.add(10 * time.Second)
		p.Admit(keysOf("u#1", "g#1", 1), ones(1))
		p.Paced()
	}
	if _, paced := p.Rate(true, "g#0"); paced {
		t.Fatal("the key cut last is still paced, not written for longer than Forget")
	}
	kin, paced := p.Rate(true, "g#1")
	if !paced {
		t.Fatal("the key written all along is no longer paced")
	}
	p.Admit(keysOf("u#2", "g#2", 1), ones(1))
	if r, paced := p.Rate(true, "g#2"); !paced || r != kin {
		t.Fatalf("a key new to the family: paced %v at %.1f, want at %.1f, the pace of its family's key still paced", paced, r, kin)
	}
}
