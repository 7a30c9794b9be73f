package adapt

import (
	"strings"
	"testing"
	"time"

	"github.com/shardline/shardline/pkg/bucketing"
)

var t0 = time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)

// feed observes rate items a second of 1 WCU each for secs seconds, a share
// of them throttled, under cur.
func feed(p *Policy, src string, from time.Time, secs, rate int, throttled float64, cur Counts) time.Time {
	for s := range secs {
		n := rate
		ok := float64(n) * (1 - throttled)
		p.Observe(src, from.Add(time.Duration(s)*time.Second), cur, Sample{
			Items: n, WCU: ok, GSIWCU: ok, Throttled: int(throttled * float64(n)),
		})
	}
	return from.Add(time.Duration(secs-1) * time.Second)
}

func TestQuietSourceIsLeftAlone(t *testing.T) {
	var p Policy
	cur := Counts{4, 1}
	now := feed(&p, "q", t0, 30, 100, 0, cur)
	if d, ok := p.Decide("q", now, cur, cur); ok {
		t.Fatalf("100 events/s on 4/1 shards raised: %+v", d)
	}
	if d, ok := p.Decide("other", now, cur, cur); ok {
		t.Fatalf("an unseen source raised: %+v", d)
	}
}

func TestRateRaisesBeforeThrottling(t *testing.T) {
	var p Policy
	cur := Counts{4, 1}
	// 600 WCU/s: the single GSI key is at 60% and the rate may double
	// before a raise takes effect.
	now := feed(&p, "s", t0, 10, 600, 0, cur)
	d, ok := p.Decide("s", now, cur, cur)
	if !ok {
		t.Fatal("600 WCU/s on one GSI key did not raise")
	}
	if d.To.GSIShards < 2 || d.To.Shards != 4 {
		t.Fatalf("raise to %+v, want the GSI only, at least doubled", d.To)
	}
	if !strings.HasPrefix(d.Reason, "rate:") {
		t.Fatalf("reason %q", d.Reason)
	}
	// Once that raise is scheduled, the same traffic asks for nothing more.
	if d2, ok := p.Decide("s", now, cur, d.To); ok {
		t.Fatalf("raised again to %+v with %+v pending", d2.To, d.To)
	}
}

func TestThrottlingRaisesTheHotIndex(t *testing.T) {
	var p Policy
	cur := Counts{16, 1}
	// 900 WCU/s gets through, 5% throttled: the GSI's one key carries 900,
	// a base key 56; only the GSI is hot.
	now := feed(&p, "s", t0, 10, 900, 0.05, cur)
	d, ok := p.Decide("s", now, cur, cur)
	if !ok || d.To.GSIShards < MinStep || d.To.Shards != 16 {
		t.Fatalf("decision %+v %v: want the GSI raised %d-fold, the base left", d, ok, MinStep)
	}
	if !strings.HasPrefix(d.Reason, "throttled:") || d.Throttled < 0.04 {
		t.Fatalf("decision %+v", d)
	}
	// A blip is not a signal.
	var q Policy
	now = feed(&q, "s", t0, 10, 100, 0, Counts{4, 1})
	q.Observe("s", now, Counts{4, 1}, Sample{Items: 1, WCU: 1, GSIWCU: 1, Throttled: 1})
	if d, ok := q.Decide("s", now, Counts{4, 1}, Counts{4, 1}); ok {
		t.Fatalf("one throttled item raised: %+v", d)
	}
}

func TestSamplesUnderOldCountsAreForgotten(t *testing.T) {
	var p Policy
	old := Counts{4, 1}
	now := feed(&p, "s", t0, 10, 900, 0.5, old)
	raised := Counts{4, 4}
	// The raise took effect: the throttling seen before it must not raise
	// again, and a few quiet seconds under the new counts decide nothing.
	now = feed(&p, "s", now.Add(time.Second), 2, 30, 0, raised)
	if d, ok := p.Decide("s", now, raised, raised); ok {
		t.Fatalf("raised on samples from before the raise: %+v", d)
	}
}

// TestRaisesAreBounded: a source whose demand exceeds anything keeps being
// throttled; every raise at least doubles and none passes Max.
func TestRaisesAreBounded(t *testing.T) {
	p := Policy{Max: 64}
	cur := Counts{4, 1}
	now := t0
	raises := 0
	for range 50 {
		now = feed(&p, "s", now.Add(time.Second), 10, 1000*cur.GSIShards, 0.3, cur)
		d, ok := p.Decide("s", now, cur, cur)
		if !ok {
			break
		}
		if d.To.Shards < cur.Shards || d.To.GSIShards < cur.GSIShards || d.To.Shards > 64 || d.To.GSIShards > 64 {
			t.Fatalf("raise %+v from %+v", d.To, cur)
		}
		if d.To.Shards < 2*cur.Shards && d.To.GSIShards < 2*cur.GSIShards {
			t.Fatalf("raise %+v from %+v doubles neither count", d.To, cur)
		}
		cur = d.To
		raises++
	}
	if cur != (Counts{64, 64}) {
		t.Fatalf("ended at %+v, want the maximum", cur)
	}
	if raises > 6 { // log2(64/1)
		t.Fatalf("%d raises", raises)
	}
}

func TestForget(t *testing.T) {
	var p Policy
	feed(&p, "s", t0, 3, 10, 0, Counts{1, 1})
	p.Forget(t0.Add(time.Minute))
	if len(p.src) != 0 {
		t.Fatalf("%d sources kept after a minute of silence", len(p.src))
	}
}

// TestRisingRatePlansForWhenTheRaiseStarts: a source rising by 5,000
// events/s a minute is planned for at the rate it will have when a raise
// decided now takes effect, not at twice the rate of now.
func TestRisingRatePlansForWhenTheRaiseStarts(t *testing.T) {
	var p Policy
	cur := Counts{4, 1}
	now := t0
	for s := range 10 {
		now = t0.Add(time.Duration(s) * time.Second)
		n := 100 + 83*s // events a second, rising 83 a second
		p.Observe("r", now, cur, Sample{Items: n, WCU: float64(n), GSIWCU: float64(n)})
	}
	d, ok := p.Decide("r", now, cur, cur)
	if !ok {
		t.Fatal("a rising source was not raised")
	}
	// In 8 minutes the rate is about 40,000 WCU/s: 58 keys at 70%.
	if d.To.Shards < 40 || d.To.GSIShards < 40 {
		t.Fatalf("raise to %+v: planned for now, not for the rate ahead", d.To)
	}
	// A flat source at the same rate plans for twice its rate only.
	var q Policy
	for s := range 10 {
		q.Observe("f", t0.Add(time.Duration(s)*time.Second), cur, Sample{Items: 800, WCU: 800, GSIWCU: 800})
	}
	if d, ok := q.Decide("f", t0.Add(9*time.Second), cur, cur); !ok || d.To.GSIShards > 4 || d.To.Shards != 4 {
		t.Fatalf("flat 800 WCU/s: %+v %v", d, ok)
	}
}

// TestThrottlingImpliesTheSourcesDemand: one writer of eight sees an eighth
// of what gets through, but the throttled share is the source's: the GSI's
// one key lets 1,000 WCU/s through and refuses 75 %, so the source asks
// for 4,000, planned at twice. Both indexes carry every item, so both rise
// to it, not only the hot one.
func TestThrottlingImpliesTheSourcesDemand(t *testing.T) {
	var p Policy
	cur := Counts{4, 1}
	now := feed(&p, "s", t0, 10, 125, 0.75, cur)
	d, ok := p.Decide("s", now, cur, cur)
	want := bucketing.ShardsFor(8000, 1)
	if !ok || d.To.Shards < want || d.To.GSIShards < want {
		t.Fatalf("decision %+v %v: want both indexes at %d or more", d, ok, want)
	}
}

// TestThrottledRiseIsSeenByEveryWriter: a source rising 83 events/s every
// second behind its GSI's one key (1,000 WCU/s). A writer of eight sees an
// eighth of the items, and what gets through is flat at its eighth of the
// key, so its own rate shows no rise; but the throttled share rises, and
// every writer sees the same share. Each plans, as the only writer does,
// for the demand when a raise would start, not for the demand now; and a
// source throttled at a steady share plans for now.
func TestThrottledRiseIsSeenByEveryWriter(t *testing.T) {
	cur := Counts{4, 1}
	decide := func(writers int, rising bool) Counts {
		var p Policy
		now := t0
		for s := range 10 {
			now = t0.Add(time.Duration(s) * time.Second)
			demand := 1100.0
			if rising {
				demand += 83 * float64(s)
			}
			n := demand / float64(writers)
			ok := 1000 / float64(writers)
			p.Observe("r", now, cur, Sample{Items: int(n), WCU: ok, GSIWCU: ok, Throttled: int(n - ok)})
		}
		d, ok := p.Decide("r", now, cur, cur)
		if !ok {
			t.Fatalf("%d writers, rising %v: no raise", writers, rising)
		}
		return d.To
	}
	one, eight := decide(1, true), decide(8, true)
	if one != eight {
		t.Fatalf("one writer raises to %+v, one of eight to %+v", one, eight)
	}
	// About 1,850 WCU/s now and 83 more each second: some 46,000 when the
	// raise starts, 66 keys at 70 % (the trend is measured from the
	// window's newer half, a few seconds back: 60).
	if one.Shards < 48 || one.GSIShards < 48 {
		t.Fatalf("rising: raise to %+v, planned for the demand now", one)
	}
	if flat := decide(8, false); flat.GSIShards > 16 || flat.Shards > 16 {
		t.Fatalf("steady: raise to %+v, want the demand now planned at twice", flat)
	}
}
