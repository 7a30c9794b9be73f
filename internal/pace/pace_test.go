package pace

import (
	"fmt"
	"math"
	"testing"
	"time"
)

type clock struct{ t time.Time }

func (c *clock) now() time.Time      { return c.t }
func (c *clock) add(d time.Duration) { c.t = c.t.Add(d) }
func newClock() *clock               { return &clock{time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)} }
func ones(n int) []float64           { w := make([]float64, n); fill(w, 1); return w }
func fill(w []float64, v float64) {
	for i := range w {
		w[i] = v
	}
}
func keysOf(t, g string, n int) []Key {
	k := make([]Key, n)
	for i := range k {
		k[i] = Key{t, g}
	}
	return k
}
func all(b []bool) bool {
	for _, x := range b {
		if !x {
			return false
		}
	}
	return true
}
func count(b []bool) (n int) {
	for _, x := range b {
		if x {
			n++
		}
	}
	return n
}
func trues(n int) []bool {
	b := make([]bool, n)
	for i := range b {
		b[i] = true
	}
	return b
}

func TestUnthrottledKeysAreNotPaced(t *testing.T) {
	var p *Pacer
	if ok, wait := p.Admit(keysOf("a", "g", 3), ones(3)); !all(ok) || wait != 0 {
		t.Fatalf("nil pacer: admitted %v, wait %v", ok, wait)
	}
	p = &Pacer{KeyWCU: 100}
	if ok, _ := p.Admit(keysOf("a", "g", 1000), ones(1000)); !all(ok) {
		t.Fatal("a pacer with no throttled key held items back")
	}
	if p.Paced() {
		t.Fatal("paced before any throttle")
	}
}

// TestBlameTheKeyTheRequestLeansOn: DynamoDB does not say which of an
// item's keys refused it; the one the request sent the most items to is
// the hotter per key.
func TestBlameTheKeyTheRequestLeansOn(t *testing.T) {
	c := newClock()
	p := &Pacer{KeyWCU: 100, Now: c.now}
	// One GSI key, four table keys: the GSI is blamed.
	var keys []Key
	for i := range 24 {
		keys = append(keys, Key{fmt.Sprintf("t%d", i%4), "g0"})
	}
	b := p.Throttled(c.now(), keys, trues(len(keys)))
	for i, x := range b {
		if x != GSI {
			t.Fatalf("item %d blamed %v, want the GSI", i, x)
		}
	}
	if _, ok := p.Rate(true, "g0"); !ok {
		t.Fatal("the GSI key is not paced")
	}
	if _, ok := p.Rate(false, "t0"); ok {
		t.Fatal("a table key is paced")
	}
	// Six GSI keys, four table keys: the table is blamed.
	keys = keys[:0]
	for i := range 24 {
		keys = append(keys, Key{fmt.Sprintf("u%d", i%4), fmt.Sprintf("h%d", i%6)})
	}
	throttled := make([]bool, len(keys))
	throttled[0] = true
	if b := p.Throttled(c.now(), keys, throttled); b[0] != Table || b[1] != None {
		t.Fatalf("blame %v", b[:2])
	}
	// A tie blames both; an item without a GSI entry, its table key.
	b = p.Throttled(c.now(), []Key{{"x", "y"}, {"q", ""}}, []bool{true, true})
	if b[0] != Table|GSI || b[1] != Table {
		t.Fatalf("blame %v", b)
	}
}

// TestAPacedKeyGoesAtItsRate: after a throttle a key takes about its
// limit's rate, growing slowly, and a second throttle of a request sent
// before the first cut does not cut again.
func TestAPacedKeyGoesAtItsRate(t *testing.T) {
	c := newClock()
	p := &Pacer{KeyWCU: 100, Now: c.now}
	p.Throttled(c.now(), keysOf("hot", "", 1), []bool{true})
	r0, _ := p.Rate(false, "hot")
	if r0 != First*100 {
		t.Fatalf("first rate %v, want %v", r0, First*100)
	}
	before := c.now().Add(-time.Millisecond)
	p.Throttled(before, keysOf("hot", "", 1), []bool{true})
	if r, _ := p.Rate(false, "hot"); r != r0 {
		t.Fatalf("a stale throttle cut the rate to %v", r)
	}
	admitted := 0.0
	for range 1000 { // ten seconds in 10 ms steps, always more to send than the key takes
		c.add(10 * time.Millisecond)
		ok, wait := p.Admit(keysOf("hot", "", 10), ones(10))
		admitted += float64(count(ok))
		if count(ok) == 0 && wait <= 0 {
			t.Fatalf("nothing admitted and no wait")
		}
	}
	// 50 a second growing by a tenth a second, compounding, and by 1 a
	// second besides, for ten seconds: about 886, give or take a burst.
	if want := r0*(math.Pow(1+Growth, 10)-1)/math.Log1p(Growth) + 0.5*Lift*100*100; math.Abs(admitted-want) > 0.05*want {
		t.Fatalf("admitted %v write units in 10 s, want about %v", admitted, want)
	}
	if ok, _ := p.Admit(keysOf("cold", "", 5), ones(5)); !all(ok) {
		t.Fatal("a cold key was held back behind a hot one")
	}
	// Without throttles the limit grows past Drop and is dropped.
	c.add(time.Minute)
	if ok, _ := p.Admit(keysOf("hot", "", 1000), ones(1000)); !all(ok) || p.Paced() {
		t.Fatalf("a key quiet for a minute is still paced")
	}
}

// TestAHeldKeyIsWrittenBurstAtATime: a writer with a backlog on a paced
// key waits, when everything is held, until the key has saved Burst's
// worth, and is then let send that much at once: not one item as soon as
// the key has one token, which is the same pace in five times the requests
// here (and a request an item on a key of a few write units a second).
func TestAHeldKeyIsWrittenBurstAtATime(t *testing.T) {
	c := newClock()
	p := &Pacer{KeyWCU: 100, Now: c.now}
	p.Throttled(c.now(), keysOf("hot", "", 1), []bool{true})
	rate, _ := p.Rate(false, "hot") // First of 100: 25 a second
	for range 3 {
		if ok, _ := p.Admit(keysOf("hot", "", 50), ones(50)); count(ok) != 0 {
			break
		}
	}
	for round := range 5 {
		ok, wait := p.Admit(keysOf("hot", "", 50), ones(50))
		if count(ok) != 0 {
			t.Fatalf("round %d: %d admitted with no tokens left", round, count(ok))
		}
		if lo := time.Duration(float64(Burst) * 0.9); wait < lo {
			t.Fatalf("round %d: wait %v for a key of %.0f a second, want about Burst (%v): the key would be written an item at a time", round, wait, rate, Burst)
		}
		c.add(wait)
		ok, _ = p.Admit(keysOf("hot", "", 50), ones(50))
		if want := int(rate * Burst.Seconds()); count(ok) < want {
			t.Fatalf("round %d: %d admitted after the wait, want Burst's worth, %d", round, count(ok), want)
		}
	}
}

// TestWritersSharingAKeyFindItsCeiling: four writers with a backlog on one
// key, each pacing on its own, as four Lambda containers do. Once past
// their first second, when each starts at First of the nominal figure,
// the key's refusals stay a small share of what they send, and they get
// most of its ceiling through: whether the key takes the nominal figure
// the pacers know, or a quarter of it (a partition shared with other
// keys), which they are not told. (Pacing that grew by a twentieth of the
// nominal figure a second refused 20 % at a quarter.)
func TestWritersSharingAKeyFindItsCeiling(t *testing.T) {
	const nominal = 100.0 // write units a second, as the pacers know it
	for _, ceiling := range []float64{nominal, nominal / 4} {
		t.Run(fmt.Sprintf("ceiling %.0f", ceiling), func(t *testing.T) {
			first, rest := share(nominal, ceiling)
			t.Logf("first second: sent %.0f, refused %.0f; then sent %.0f, refused %.0f (%.1f%%), stored %.1f a second of a ceiling of %.0f",
				first.sent, first.refused, rest.sent, rest.refused, 100*rest.refused/rest.sent, rest.stored/59, ceiling)
			if rest.refused/rest.sent > 0.10 {
				t.Errorf("%.1f%% of attempts refused after the first second, want under 10%%", 100*rest.refused/rest.sent)
			}
			if rest.stored/59 < 0.6*ceiling {
				t.Errorf("%.1f write units a second stored, want at least 60%% of the ceiling", rest.stored/59)
			}
		})
	}
}

// tally is what writers sent of a key, and what it refused and stored.
type tally struct{ sent, refused, stored float64 }

// share plays four writers whose pacers know a key's ceiling as nominal
// sharing a key that takes ceiling, each with a backlog, for a minute:
// what they did in the first second, and in the rest.
func share(nominal, ceiling float64) (first, rest tally) {
	c := newClock()
	var writers [4]*Pacer
	for i := range writers {
		writers[i] = &Pacer{KeyWCU: nominal, Now: c.now}
	}
	tokens, at := ceiling, c.now() // the key: a token bucket with a second's burst
	const step = 20 * time.Millisecond
	for i := range 3000 { // a minute
		c.add(step)
		tokens = math.Min(ceiling, tokens+c.now().Sub(at).Seconds()*ceiling)
		at = c.now()
		t := &rest
		if i < 50 {
			t = &first
		}
		for _, w := range writers {
			// Each writer has a backlog: it sends what its pacer admits,
			// up to a request of 25.
			n := 25
			ok, _ := w.Admit(keysOf("k", "", n), ones(n))
			var throttled []bool
			var keys []Key
			for _, o := range ok {
				if !o {
					continue
				}
				keys = append(keys, Key{"k", ""})
				t.sent++
				if tokens >= 1 {
					tokens--
					t.stored++
					throttled = append(throttled, false)
				} else {
					t.refused++
					throttled = append(throttled, true)
				}
			}
			w.Throttled(c.now(), keys, throttled)
		}
	}
	return first, rest
}

// TestATieGoesToTheKeyAlreadyPaced: once a GSI key is paced, a request of
// one item (as many on its table key as on its GSI key) that throttles
// is laid on the GSI key alone, and the table key stays unpaced.
func TestATieGoesToTheKeyAlreadyPaced(t *testing.T) {
	c := newClock()
	p := &Pacer{KeyWCU: 100, Now: c.now}
	var keys []Key
	for i := range 8 {
		keys = append(keys, Key{fmt.Sprintf("t%d", i%4), "g"})
	}
	p.Throttled(c.now(), keys, trues(len(keys)))
	c.add(time.Second)
	if b := p.Throttled(c.now(), []Key{{"t1", "g"}}, []bool{true}); b[0] != GSI {
		t.Fatalf("a one-item request on a paced GSI key blamed %v, want the GSI", b[0])
	}
	if _, ok := p.Rate(false, "t1"); ok {
		t.Fatal("the table key of a tie was paced beside the GSI key known hot")
	}
}

// TestANewKeyOfAHotFamilyStartsPaced: when a hot source is spread over new
// keys, a new key of a family whose key is paced starts at that key's
// pace instead of taking a whole backlog at once; a key of another family
// is not paced, and a key that throttles first starts at its family's pace.
func TestANewKeyOfAHotFamilyStartsPaced(t *testing.T) {
	c := newClock()
	p := &Pacer{KeyWCU: 100, Now: c.now, Family: func(k string) string { return k[:len(k)-2] }}
	p.Throttled(c.now(), keysOf("t#0", "g#0", 1), []bool{true})
	p.Throttled(c.now().Add(time.Millisecond), keysOf("t#0", "g#0", 1), []bool{true})
	hot, _ := p.Rate(true, "g#0")
	ok, _ := p.Admit(keysOf("u#0", "g#1", 100), ones(100))
	if n := count(ok); n == 0 || n > 10 {
		t.Fatalf("%d of 100 items admitted to a new key of a family paced at %.1f a second, want a burst's worth", n, hot)
	}
	if r, paced := p.Rate(true, "g#1"); !paced || r != hot {
		t.Fatalf("the new key is paced %v at %.1f, want %.1f", paced, r, hot)
	}
	if ok, _ := p.Admit(keysOf("v#0", "h#1", 100), ones(100)); !all(ok) {
		t.Fatal("a key of another family was held back")
	}
	p.Throttled(c.now(), keysOf("w#0", "g#2", 1), []bool{true})
	if r, _ := p.Rate(true, "g#2"); r != hot {
		t.Fatalf("a key of the family throttled first starts at %.1f, want its family's %.1f", r, hot)
	}
}

// TestHoldSaysWhichPaceHolds: an item held back is marked with the key
// whose pace held it, table or GSI; an item admitted, or one of keys no
// pace holds, with None. A request of 10 items to one GSI key and 10
// table keys throttled lays its throttles on the GSI key.
func TestHoldSaysWhichPaceHolds(t *testing.T) {
	c := newClock()
	p := &Pacer{Now: c.now}
	keys := make([]Key, 10)
	for i := range keys {
		keys[i] = Key{Table: fmt.Sprintf("t#%d", i), GSI: "g#0"}
	}
	p.Throttled(c.now(), keys, trues(10))
	c.add(100 * time.Millisecond)
	held, _ := p.Hold(keysOf("t#1", "g#0", 400), ones(400))
	var gsi, none int
	for _, b := range held {
		switch b {
		case GSI:
			gsi++
		case None:
			none++
		default:
			t.Fatalf("an item held for %v; want the GSI key's pace", b)
		}
	}
	if gsi == 0 || none == 0 {
		t.Fatalf("%d held for the GSI key, %d admitted: want both, what the key's pace saved up in 100 ms admitted and the rest held", gsi, none)
	}
	if held, _ := p.Hold(keysOf("x#0", "y#0", 5), ones(5)); held[0] != None || held[4] != None {
		t.Fatalf("keys no pace holds: %v", held)
	}
}
