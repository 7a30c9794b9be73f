package adapt

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/shardline/shardline/internal/shardmap"
)

var t0 = time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)

// feed observes rate items a second of 1 WCU each for secs seconds, a share
// of them throttled (blamed on no index), under cur. Items arrive as they
// are sent, as in API requests: all are stored in the end.
func feed(p *Policy, src string, from time.Time, secs, rate int, throttled float64, cur Counts) time.Time {
	for s := range secs {
		n := rate
		ok := float64(n) * (1 - throttled)
		p.Observe(src, from.Add(time.Duration(s)*time.Second), cur, Sample{
			Items: n, Stored: n, WCU: ok, GSIWCU: ok, Throttled: int(throttled * float64(n)),
		})
	}
	return from.Add(time.Duration(secs-1) * time.Second)
}

// stream observes a writer of a Kinesis shard for secs seconds: its keys
// store stored items a second of 1 WCU each, a share of them throttled,
// and the events' times advance by progress
// seconds a second (1: it keeps up; 1/3: it gets through a second of
// events every three).
func stream(p *Policy, src string, from time.Time, secs int, stored, throttled, progress float64, cur Counts) time.Time {
	at := from.Add(-time.Hour)
	for s := range secs {
		now := from.Add(time.Duration(s) * time.Second)
		prev := at
		at = at.Add(time.Duration(progress * float64(time.Second)))
		n := int(stored / (1 - throttled))
		th := n - int(stored)
		p.Observe(src, now, cur, Sample{Items: n, Stored: int(stored), WCU: stored, GSIWCU: stored, Throttled: th, Latest: at,
			Offered: stored, Since: prev, Arrived: at})
	}
	return from.Add(time.Duration(secs-1) * time.Second)
}

// TestQuietSourceIsLeftAlone: 40 WCU/s on 4/1 shards is not worth a
// report; 100 WCU/s is reported, and its sum asks for nothing.
func TestQuietSourceIsLeftAlone(t *testing.T) {
	var p Policy
	cur := Counts{4, 1}
	now := feed(&p, "q", t0, 30, 40, 0, cur)
	if m, ok := p.Measure("q", now, cur); ok {
		t.Fatalf("40 WCU/s on 4/1 shards measured: %+v", m)
	}
	if m, ok := p.Measure("other", now, cur); ok {
		t.Fatalf("an unseen source measured: %+v", m)
	}
	now = feed(&p, "q", now.Add(time.Second), 10, 100, 0, cur)
	m, ok := p.Measure("q", now, cur)
	if !ok || m.Throttled || m.GSI < 95 || m.GSI > 105 {
		t.Fatalf("100 WCU/s: measured %+v %v", m, ok)
	}
	if d, ok := p.ForDemand("q", now, cur, cur, m.Measure, 1, false); ok {
		t.Fatalf("100 WCU/s on 4/1 shards raised: %+v", d)
	}
}

// TestASteadySourceUnderItsKeysIsLeftAlone: 600 WCU/s on one GSI key,
// 60 % of it, steady: measured every half window, nothing to raise until
// it rises or throttles.
func TestASteadySourceUnderItsKeysIsLeftAlone(t *testing.T) {
	var p Policy
	cur := Counts{4, 1}
	now := feed(&p, "s", t0, 10, 600, 0, cur)
	for range 4 {
		m, ok := p.Measure("s", now, cur)
		if !ok {
			t.Fatalf("600 WCU/s on one GSI key not measured")
		}
		if d, ok := p.ForDemand("s", now, cur, cur, m.Measure, 1, false); ok {
			t.Fatalf("600 WCU/s on one GSI key raised: %+v", d)
		}
		now = feed(&p, "s", now.Add(time.Second), 5, 600, 0, cur)
	}
}

// measureAll is n writers, each with its share of a source's traffic,
// measuring it for secs seconds from t0 as stream has it, and the sum of
// what they measured.
func measureAll(t *testing.T, n int, secs int, stored, progress float64, cur Counts) (shardmap.Measure, []*Policy) {
	t.Helper()
	var sum shardmap.Measure
	var ps []*Policy
	for range n {
		p := &Policy{KeyWCU: 250}
		now := stream(p, "s", t0, secs, stored/float64(n), 0.05, progress, cur)
		own, ok := p.Measure("s", now, cur)
		if !ok || !own.Throttled {
			t.Fatalf("a throttled writer measured %+v %v", own, ok)
		}
		if _, again := p.Measure("s", now, cur); again {
			t.Fatalf("measured twice at once")
		}
		sum.Table += own.Table
		sum.GSI += own.GSI
		ps = append(ps, p)
	}
	return sum, ps
}

// TestCapacityIsLearnedFromTheIndexThatRefused is the source as a
// deployed policy sees it, told no ceiling: 720 WCU/s asked of 4 table
// keys and 1 GSI key that takes 250, under DynamoDB's nominal 1,000. Four
// writers, paced on the GSI key, store 250 WCU/s between them and get
// through a second of events every 2.9 seconds. Each measures a quarter
// of the 720 it is asked, what the keys took of it, and that the GSI
// refused it; their sum raises the GSI to carry 720 on keys of the 250
// they took (4 at 70 % of it, sized a tenth above the reading; 3 at the
// ceiling) and leaves the table, which
// refused nothing, on its nominal figure. Without the refusal the same
// sum is under the GSI key's nominal 1,000, and nothing is raised.
func TestCapacityIsLearnedFromTheIndexThatRefused(t *testing.T) {
	cur := Counts{4, 1}
	var sum shardmap.Measure
	var ps []*Policy
	for range 4 {
		p := &Policy{}
		at := t0.Add(-time.Hour)
		for s := range 20 {
			prev := at
			at = at.Add(time.Second * 250 / 720)
			// 62.5 WCU a second stored of 70 items sent, the 7.5 refused
			// laid on their GSI key.
			p.Observe("s", t0.Add(time.Duration(s)*time.Second), cur, Sample{Items: 70, Stored: 62, WCU: 62.5, GSIWCU: 62.5,
				Throttled: 8, GSIThrottled: 8, Latest: at, Offered: 62.5, Since: prev, Arrived: at})
		}
		own, ok := p.Measure("s", t0.Add(19*time.Second), cur)
		if !ok || !own.Throttled || own.Refused != shardmap.GSIIndex || own.Took.GSI != 62.5 {
			t.Fatalf("a writer paced on its GSI key measured %+v %v", own, ok)
		}
		sum.Table += own.Table
		sum.GSI += own.GSI
		sum.Took.Table += own.Took.Table
		sum.Took.GSI += own.Took.GSI
		sum.Refused |= own.Refused
		ps = append(ps, p)
	}
	if sum.GSI < 700 || sum.GSI > 740 || sum.Took.GSI != 250 {
		t.Fatalf("summed %+v, want about 720 WCU/s asked and 250 taken", sum)
	}
	d, ok := known(ps[0], 4, "s").ForDemand("s", t0, cur, cur, sum, 4, true)
	if !ok || d.To != (Counts{4, 4}) || d.Cover != (Counts{0, 3}) {
		t.Fatalf("decision %+v %v: want the GSI raised to 4 (720 at 70 %% of the 250 measured, sized at 275), 3 at the ceiling, the table left", d, ok)
	}
	if !strings.Contains(d.Reason, "250 WCU/s (measured) GSI") || !strings.Contains(d.Reason, "1000 WCU/s (nominal) base") {
		t.Fatalf("reason %q does not say what each index's keys take", d.Reason)
	}
	unrefused := sum
	unrefused.Refused = 0
	if d, ok := (&Policy{}).ForDemand("s", t0, cur, cur, unrefused, 4, true); ok {
		t.Fatalf("a demand under the nominal ceiling, nothing refused, raised %+v", d)
	}
	// A source that keeps up with its measured keys is not raised: 260
	// asked of a key that took 250 is within MeasuredOver of it.
	keeps := shardmap.Measure{Rates: shardmap.Rates{Table: 260, GSI: 260}, Took: shardmap.Rates{Table: 250, GSI: 250}, Refused: shardmap.GSIIndex}
	if d, ok := (&Policy{}).ForDemand("k", t0, cur, cur, keeps, 4, true); ok {
		t.Fatalf("a source within %v of what its keys took was raised: %+v", MeasuredOver, d)
	}
}

// TestThrottlingRaisesTheIndexOverItsKeys: the source, 720 WCU/s
// on 4 table keys and 1 GSI key of 250. Four writers store 250 WCU/s
// between them and get through a second of events every 2.9 seconds: each
// measures a quarter of 720. Their sum is over the GSI's key, three times,
// and under the table's keys: the GSI rises to 5 keys (720 at 70 %), the
// table stays.
func TestThrottlingRaisesTheIndexOverItsKeys(t *testing.T) {
	cur := Counts{4, 1}
	sum, ps := measureAll(t, 4, 20, 250, 250.0/720, cur)
	if sum.Table < 700 || sum.Table > 740 || sum.GSI != sum.Table {
		t.Fatalf("measured %+v, want about 720 WCU/s each", sum)
	}
	d, ok := ps[0].ForDemand("s", t0, cur, cur, sum, 4, true)
	if !ok || d.To != (Counts{4, 5}) || d.Cover != (Counts{0, 3}) {
		t.Fatalf("decision %+v %v: want the GSI raised to 5 (3 at the ceiling), the table left", d, ok)
	}
	if !strings.HasPrefix(d.Reason, "throttled: 4 writers") {
		t.Fatalf("reason %q", d.Reason)
	}
	// A blip is not a signal.
	var q Policy
	now := feed(&q, "s", t0, 20, 100, 0, Counts{4, 1})
	q.Observe("s", now, Counts{4, 1}, Sample{Items: 1, WCU: 1, GSIWCU: 1, Throttled: 1})
	if m, ok := q.Measure("s", now, Counts{4, 1}); ok && m.Throttled {
		t.Fatalf("one throttled item measured as throttling: %+v", m)
	}
}

// TestAPendingRaiseStopsTheNext: with 4/5 scheduled, the same demand,
// measured under 4/1 until the raise takes effect, asks for nothing; a
// demand that outgrows the pending step twice over does, and then for
// both indexes if both are over.
func TestAPendingRaiseStopsTheNext(t *testing.T) {
	p := &Policy{KeyWCU: 250}
	cur, pending := Counts{4, 1}, Counts{4, 5}
	if d, ok := p.ForDemand("s", t0, cur, pending, shardmap.Measure{Rates: shardmap.Rates{Table: 720, GSI: 720}}, 4, true); ok {
		t.Fatalf("720 WCU/s with %+v pending: raised to %+v", pending, d.To)
	}
	// 2,400 WCU/s: over the table's 4 keys, not twice over the 5 GSI keys
	// pending: the table alone.
	if d, ok := p.ForDemand("s", t0, cur, pending, shardmap.Measure{Rates: shardmap.Rates{Table: 2400, GSI: 2400}}, 4, true); !ok || d.To != (Counts{14, 5}) {
		t.Fatalf("2,400 WCU/s with %+v pending: %+v %v, want the table at 14", pending, d, ok)
	}
	d, ok := p.ForDemand("s", t0, cur, pending, shardmap.Measure{Rates: shardmap.Rates{Table: 3000, GSI: 3000}}, 4, true)
	if !ok || d.To != (Counts{18, 18}) {
		t.Fatalf("3,000 WCU/s with %+v pending: %+v %v, want both at 18", pending, d, ok)
	}
}

// TestDrainingABacklogIsMeasuredByItsArrival: after the GSI was spread,
// the backlog drains at the table keys' ceiling and they throttle; but
// the writer gets through events faster than they arrive, so it measures
// the rate they arrived at (a quarter of 720), not the rate it drains at
// (250), and the four writers' sum, under the raised keys, asks for
// nothing more.
func TestDrainingABacklogIsMeasuredByItsArrival(t *testing.T) {
	p := Policy{KeyWCU: 250}
	cur := Counts{4, 5}
	now := stream(&p, "s", t0, 20, 250, 0.08, 1000.0/720, cur)
	m, ok := p.Measure("s", now, cur)
	if !ok || m.GSI < 170 || m.GSI > 190 {
		t.Fatalf("a draining writer measured %+v %v, want about 180 WCU/s", m, ok)
	}
	sum := shardmap.Measure{Rates: shardmap.Rates{Table: 4 * m.Table, GSI: 4 * m.GSI}}
	if d, ok := p.ForDemand("s", now, cur, cur, sum, 4, m.Throttled); ok {
		t.Fatalf("draining a backlog raised: %+v", d)
	}
}

// TestRequestsLeftUnstoredImplyTheDemand: items sent as they arrive (API
// requests) have no backlog to measure; the share left unstored (held by
// their key's pace until the deadline, answered 503) says how far over
// the keys the source is.
func TestRequestsLeftUnstoredImplyTheDemand(t *testing.T) {
	p := Policy{KeyWCU: 250}
	cur := Counts{4, 1}
	for s := range 20 {
		p.Observe("s", t0.Add(time.Duration(s)*time.Second), cur,
			Sample{Items: 720, Stored: 240, WCU: 240, GSIWCU: 240, Throttled: 12})
	}
	own, ok := p.Measure("s", t0.Add(19*time.Second), cur)
	if !ok || !own.Throttled || own.GSI < 700 || own.GSI > 740 {
		t.Fatalf("measured %+v %v, want about 720 WCU/s", own, ok)
	}
}

func TestSamplesUnderOldCountsAreForgotten(t *testing.T) {
	var p Policy
	old := Counts{4, 1}
	now := feed(&p, "s", t0, 10, 900, 0.5, old)
	raised := Counts{4, 4}
	// The raise took effect: the throttling seen before it must not raise
	// again, and a few quiet seconds under the new counts decide nothing.
	now = feed(&p, "s", now.Add(time.Second), 2, 900, 0, raised)
	if m, ok := p.Measure("s", now, raised); ok {
		t.Fatalf("measured on samples from before the raise: %+v", m)
	}
}

// TestRaisesAreBounded: no raise passes Max, and a demand beyond it ends
// at Max.
func TestRaisesAreBounded(t *testing.T) {
	p := Policy{Max: 64}
	d, ok := p.ForDemand("s", t0, Counts{4, 1}, Counts{4, 1}, shardmap.Measure{Rates: shardmap.Rates{Table: 1e6, GSI: 1e6}}, 100, true)
	if !ok || d.To != (Counts{64, 64}) {
		t.Fatalf("%+v %v, want the maximum", d, ok)
	}
	if d, ok := p.ForDemand("s", t0, Counts{64, 64}, Counts{64, 64}, shardmap.Measure{Rates: shardmap.Rates{Table: 1e6, GSI: 1e6}}, 100, true); ok {
		t.Fatalf("raised past the maximum: %+v", d)
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

// TestRisingRatePlansForWhenTheRaiseStarts: a source rising by 2,400
// events/s a minute, sent through four writers that each see a quarter of
// it and none throttled yet, is planned for at the rate it will have when
// a raise decided now takes effect, not at the rate of now, and not at the
// quarter one writer sees: it passes its GSI key before its sums have
// risen over three windows, and the step raised for then is raised again
// once they have. A flat source at the same rate is under its key: left
// alone.
func TestRisingRatePlansForWhenTheRaiseStarts(t *testing.T) {
	cur := Counts{4, 1}
	for _, c := range []struct {
		name   string
		rising bool
	}{{"r", true}, {"f", false}} {
		ps := []*Policy{{}, {}, {}, {}}
		var d Decision
		var raised bool
		last := cur // the last step: pending once raised
		for s := range 61 {
			now := t0.Add(time.Duration(s) * time.Second)
			n := 800 // events a second, the four writers together
			if c.rising {
				n = 40 * s // rising 40 a second
			}
			for _, p := range ps {
				p.Observe(c.name, now, cur, Sample{Items: n / 4, Stored: n / 4, WCU: float64(n / 4), GSIWCU: float64(n / 4)})
			}
			if s%10 != 9 {
				continue
			}
			var sum shardmap.Measure
			n = 0
			for _, p := range ps {
				m, ok := p.Measure(c.name, now, cur)
				if m.Throttled {
					t.Fatalf("%s at %ds: a writer measured %+v throttled", c.name, s, m)
				}
				if ok {
					sum.Table += m.Table
					sum.GSI += m.GSI
					n++
				}
			}
			if n == 0 {
				continue // under ReportShare of its key: 45 WCU/s a writer at 9 s
			}
			d, raised = ps[0].ForDemand(c.name, now, cur, last, sum, n, false)
			if raised && strings.Contains(d.Reason, "rising") {
				break
			}
			if raised {
				last = d.To
			}
		}
		switch {
		case !c.rising && raised:
			t.Fatalf("flat 800 WCU/s: %+v", d)
		case !c.rising:
		case !raised:
			t.Fatalf("a rising source was not raised for its rise (last step %+v)", last)
		case !strings.HasPrefix(d.Reason, "rate, rising: 4 writers"):
			t.Fatalf("reason %q", d.Reason)
		case d.To.Shards < 25 || d.To.GSIShards < 25:
			// In 8 minutes the rate is about 20,000 WCU/s: 29 keys at 70%.
			t.Fatalf("raise to %+v: planned for now, not for the rate ahead", d.To)
		}
	}
}

// TestASummedRiseIsPlannedFor: the writers' sum rose from 800 to 1,100 to
// 1,500 to 2,000 WCU/s, ten seconds apart: the raise plans for where it is
// heading when a raise decided now starts, eight minutes on; a step up,
// and a steady sum, plan for now.
func TestASummedRiseIsPlannedFor(t *testing.T) {
	p := &Policy{KeyWCU: 1000}
	cur := Counts{4, 1}
	p.ForDemand("r", t0.Add(-20*time.Second), cur, cur, shardmap.Measure{Rates: shardmap.Rates{Table: 800, GSI: 800}}, 8, true)
	p.ForDemand("r", t0.Add(-10*time.Second), cur, cur, shardmap.Measure{Rates: shardmap.Rates{Table: 1100, GSI: 1100}}, 8, true)
	if d, ok := p.ForDemand("r", t0, cur, cur, shardmap.Measure{Rates: shardmap.Rates{Table: 1500, GSI: 1500}}, 8, true); !ok || d.To != (Counts{4, 3}) {
		t.Fatalf("1,500 WCU/s: %+v %v, want the GSI at 3", d, ok)
	}
	d, ok := p.ForDemand("r", t0.Add(10*time.Second), cur, cur, shardmap.Measure{Rates: shardmap.Rates{Table: 2000, GSI: 2000}}, 8, true)
	// (A sum half a window on is too soon to tell: the older one stays.)
	if !ok || !strings.HasPrefix(d.Reason, "throttled, rising") || d.Demand < 20000 {
		t.Fatalf("rising to 2,000 WCU/s: %+v %v, want planned for about 21,000", d, ok)
	}
	q := &Policy{KeyWCU: 1000}
	q.ForDemand("f", t0.Add(-10*time.Second), cur, cur, shardmap.Measure{Rates: shardmap.Rates{Table: 500, GSI: 500}}, 8, true)
	q.ForDemand("f", t0, cur, cur, shardmap.Measure{Rates: shardmap.Rates{Table: 1500, GSI: 1500}}, 8, true)
	if d, ok := q.ForDemand("f", t0.Add(10*time.Second), cur, cur, shardmap.Measure{Rates: shardmap.Rates{Table: 1600, GSI: 1600}}, 8, true); !ok || d.Demand != 1600 {
		t.Fatalf("a step, then steady: %+v %v", d, ok)
	}
}

// TestOneRiseIsNotARamp: sums that do not rise steadily over three
// windows are planned for as they are now. Continued eight minutes ahead,
// a burst (a stalled writer catching up), a writer whose report joins the
// sum, or two rises in a flat source's noise would plan many times the
// source's keys: the ramp test compounded 7/12 -> 27/27 so on a loaded
// machine, and the overload test raised a flat source's GSI to 12.
func TestOneRiseIsNotARamp(t *testing.T) {
	cur := Counts{4, 1}
	for _, c := range []struct {
		name    string
		sums    [trend]float64
		writers [trend]int
	}{
		{"burst", [trend]float64{1000, 1100, 1210, 2200}, [trend]int{2, 2, 2, 2}},
		{"a writer joins", [trend]float64{1000, 1150, 1300, 2600}, [trend]int{1, 1, 1, 2}},
		{"a writer joins a ramp", [trend]float64{1000, 1200, 1400, 2800}, [trend]int{1, 1, 2, 2}},
		{"noise: a dip, then two rises", [trend]float64{1000, 900, 1000, 1150}, [trend]int{4, 4, 4, 4}},
	} {
		p := &Policy{KeyWCU: 1000}
		var d Decision
		var ok bool
		for i, sum := range c.sums {
			now := t0.Add(time.Duration(i) * 10 * time.Second)
			d, ok = p.ForDemand(c.name, now, cur, cur, shardmap.Measure{Rates: shardmap.Rates{Table: sum, GSI: sum}}, c.writers[i], true)
		}
		if want := c.sums[trend-1]; !ok || d.Demand != want || strings.Contains(d.Reason, "rising") {
			t.Errorf("%s %v: %+v %v, want planned for %.0f as it is", c.name, c.sums, d, ok, want)
		}
	}
	// A steady ramp read by the same writers is still continued.
	p := &Policy{KeyWCU: 1000}
	var d Decision
	for i, sum := range []float64{1000, 1300, 1650, 2000} {
		d, _ = p.ForDemand("ramp", t0.Add(time.Duration(i)*10*time.Second), cur, cur, shardmap.Measure{Rates: shardmap.Rates{Table: sum, GSI: sum}}, 2, true)
	}
	if want := 2000 + 1000.0/30*DefaultHorizon.Seconds(); d.Demand != want || !strings.Contains(d.Reason, "rising") {
		t.Errorf("ramp 1000, 1300, 1650, 2000: planned for %.0f (%s), want %.0f", d.Demand, d.Reason, want)
	}
}

// TestALongWriteCountsAtTheRateItWent: a batch paced for 24 seconds is
// observed once, when it ends; its write units are spread over those
// seconds, so the window takes what its keys took a second (62.5), not
// the whole batch at once. What the batch was offered is the rate its
// records arrived at (180 WCU/s over their 8.3 seconds of arrivals),
// though the writer stored only what its keys took.
func TestALongWriteCountsAtTheRateItWent(t *testing.T) {
	p := &Policy{}
	cur := Counts{4, 1}
	arrived := t0.Add(-time.Minute)
	now := t0
	for range 3 {
		since := arrived
		arrived = arrived.Add(time.Second * 500 / 60)
		p.Observe("s", now, cur, Sample{Items: 500, Stored: 500, WCU: 1500, GSIWCU: 1500, Throttled: 40, GSIThrottled: 40,
			Latest: arrived, Offered: 1500, Since: since, Arrived: arrived, Began: now.Add(-24 * time.Second)})
		now = now.Add(24 * time.Second)
	}
	m, ok := p.Measure("s", now.Add(-24*time.Second), cur)
	if !ok {
		t.Fatal("a paced writer measured nothing")
	}
	if m.Took.GSI < 60 || m.Took.GSI > 65 {
		t.Errorf("took %.1f WCU/s of the GSI, want 62.5: the batch's 24 seconds", m.Took.GSI)
	}
	if m.GSI < 175 || m.GSI > 185 || !m.Throttled || m.Refused != shardmap.GSIIndex {
		t.Errorf("measured %+v, want 180 WCU/s asked, throttled, by the GSI", m)
	}
}

// TestBothBlamedIsTheIndexWithFewerKeys: a paced request of one item has
// as many items on each key, and the pacer blames both; the window then
// takes the index whose keys each carry more of the source, or the one
// blamed half as often again.
func TestBothBlamedIsTheIndexWithFewerKeys(t *testing.T) {
	var p Policy
	for _, c := range []struct {
		cur        Counts
		table, gsi int
		want       shardmap.Indexes
	}{
		{Counts{4, 1}, 40, 40, shardmap.GSIIndex},
		{Counts{4, 5}, 40, 40, shardmap.TableIndex},
		{Counts{4, 4}, 40, 40, shardmap.TableIndex | shardmap.GSIIndex},
		{Counts{4, 1}, 80, 40, shardmap.TableIndex},
		{Counts{4, 1}, 0, 40, shardmap.GSIIndex},
		{Counts{4, 1}, 3, 3, 0},
	} {
		if got := p.refused(Sample{Items: 500, TableThrottled: c.table, GSIThrottled: c.gsi}, c.cur); got != c.want {
			t.Errorf("%+v: %d table and %d GSI blamed: refused %d, want %d", c.cur, c.table, c.gsi, got, c.want)
		}
	}
}

// TestWhatKeysTookIsLearnedOnlyWhenItMeasuresThem: what keys took is their
// ceiling only when it can be: not from a sum that lacks a writer seen in
// the last two minutes, not from keys that took less than a sixteenth of
// what they were asked (a stalled writer), and then the nominal figure
// decides.
func TestWhatKeysTookIsLearnedOnlyWhenItMeasuresThem(t *testing.T) {
	cur := Counts{4, 1}
	hot := shardmap.Measure{Rates: shardmap.Rates{Table: 720, GSI: 720}, Took: shardmap.Rates{Table: 250, GSI: 250}, Refused: shardmap.GSIIndex}
	p := &Policy{}
	known(p, 4, "s", "t")
	if _, ok := p.ForDemand("s", t0, cur, cur, hot, 4, true); !ok {
		t.Fatal("four writers' sum, refused by the GSI: no raise")
	}
	half := hot
	half.Rates, half.Took = shardmap.Rates{Table: 360, GSI: 360}, shardmap.Rates{Table: 125, GSI: 125}
	if d, ok := p.ForDemand("t", t0, cur, cur, hot, 4, true); !ok || d.To.GSIShards != 4 {
		t.Fatalf("another source: %+v %v", d, ok)
	}
	if d, ok := p.ForDemand("t", t0.Add(time.Minute), cur, cur, half, 2, true); ok {
		t.Fatalf("two of the four writers seen a minute before learned a ceiling: %+v", d)
	}
	stalled := hot
	stalled.Took = shardmap.Rates{Table: 40, GSI: 40}
	if d, ok := known(&Policy{}, 4, "u").ForDemand("u", t0, cur, cur, stalled, 4, true); ok {
		t.Fatalf("keys that took 40 of 720 asked were taken for their ceiling: %+v", d)
	}
}

// TestWhatKeysTookIsNotLearnedWhileTheyDrainOrSettle: a writer's window
// does not report an index refusing it in the minute after the counts in
// effect change, nor while it also writes items placed under other counts.
func TestWhatKeysTookIsNotLearnedWhileTheyDrainOrSettle(t *testing.T) {
	throttled := Sample{Items: 70, Stored: 62, WCU: 62, GSIWCU: 62, Throttled: 8, GSIThrottled: 8}
	p := &Policy{}
	old, cur := Counts{4, 1}, Counts{4, 4}
	p.Observe("s", t0.Add(-time.Second), old, throttled)
	for s := range 20 {
		p.Observe("s", t0.Add(time.Duration(s)*time.Second), cur, throttled)
	}
	if m, ok := p.Measure("s", t0.Add(19*time.Second), cur); !ok || m.Refused != 0 {
		t.Fatalf("20 s after the counts changed: %+v %v, want measured, nothing refused", m, ok)
	}
	q := &Policy{}
	drain := throttled
	drain.Elsewhere = 30
	for s := range 20 {
		q.Observe("s", t0.Add(time.Duration(s)*time.Second), cur, drain)
	}
	if m, ok := q.Measure("s", t0.Add(19*time.Second), cur); !ok || m.Refused != 0 {
		t.Fatalf("while a backlog under other counts drains: %+v %v, want measured, nothing refused", m, ok)
	}
	throttledAgain := &Policy{}
	for s := range 20 {
		throttledAgain.Observe("s", t0.Add(time.Duration(s)*time.Second), cur, throttled)
	}
	if m, ok := throttledAgain.Measure("s", t0.Add(19*time.Second), cur); !ok || m.Refused != shardmap.GSIIndex {
		t.Fatalf("a writer refused by its GSI key: %+v %v", m, ok)
	}
}

// TestTheGSIKeysTookWhatWasPlacedOnOlderTableKeys: a writer draining a
// backlog stamped before a table raise writes its items to the old table
// keys but to the GSI keys in effect, so what the GSI's keys took counts
// them and what the table's keys took does not. In the quarter ramp, a
// window of 18 GSI write units counted beside 35 on older table keys read
// the GSI's keys at a third of what they took.
func TestTheGSIKeysTookWhatWasPlacedOnOlderTableKeys(t *testing.T) {
	p := &Policy{}
	cur := Counts{8, 5}
	for s := range 10 {
		p.Observe("s", t0.Add(time.Duration(s)*time.Second), cur, Sample{Items: 20, Stored: 20, WCU: 20, GSIWCU: 20,
			Elsewhere: 30, ElsewhereGSIWCU: 30, Throttled: 10})
	}
	m, ok := p.Measure("s", t0.Add(9*time.Second), cur)
	if !ok {
		t.Fatal("a throttled writer measured nothing")
	}
	if m.Took.GSI != 50 || m.Took.Table != 20 {
		t.Errorf("took %+v a second, want 50 of the GSI's keys in effect and 20 of the table's", m.Took)
	}
	if m.Refused != 0 {
		t.Errorf("refused %d while items placed on older table keys drain, want none read", m.Refused)
	}
}

// TestASumIsSettledOnceItsSlowestWriterIs: a raise took effect at 10:22;
// at 10:29 a writer 7 minutes behind still drains events placed before
// it, and the sum is not settled until its arrivals are Settle past the
// raise (in the quarter ramp, a sum of one writer past the raise and one
// still on the old keys read 2 WCU/s a key of 5 under 7/7 and raised a
// fourth step).
func TestASumIsSettledOnceItsSlowestWriterIs(t *testing.T) {
	raised := t0.Add(22 * time.Minute)
	for _, c := range []struct {
		now    time.Duration
		behind float64
		want   bool
	}{
		{29 * time.Minute, 420, false}, // reached 10:22
		{29 * time.Minute, 300, true},  // reached 10:24, a minute past Settle
		{24 * time.Minute, 0, true},
		{23 * time.Minute, 30, false}, // reached 10:22:30
	} {
		if got := Settled(raised, t0.Add(c.now), c.behind); got != c.want {
			t.Errorf("at %v, %v s behind: settled %v, want %v", c.now, c.behind, got, c.want)
		}
	}
	if !Settled(time.Time{}, t0, 1000) {
		t.Error("never raised: not settled")
	}
}

// TestARaiseHoldsItsOwnIndexLonger: for AfterRaise after an index's raise
// takes effect no writer reports that index refusing (the quarantine
// flood was raised a second time, 4 -> 12, by a writer that had not seen
// the first); the other index's keys are not new, and are held for
// Settle only (in the quarter ramp, a GSI raise held the table's reading
// for five minutes, and its raise applied five minutes late).
func TestARaiseHoldsItsOwnIndexLonger(t *testing.T) {
	gsi := shardmap.Raises{GSI: t0.Add(9 * time.Minute)}
	table := shardmap.Raises{Table: t0.Add(22 * time.Minute)}
	both := shardmap.Raises{Table: t0.Add(22 * time.Minute), GSI: t0.Add(16 * time.Minute)}
	all := shardmap.TableIndex | shardmap.GSIIndex
	for _, c := range []struct {
		name string
		r    shardmap.Raises
		now  time.Duration
		want shardmap.Indexes
	}{
		{"never raised", shardmap.Raises{}, 9 * time.Minute, 0},
		{"the GSI's raise taking effect", gsi, 9 * time.Minute, all},
		{"the GSI's raise settling", gsi, 9*time.Minute + Settle - time.Second, all},
		{"the GSI's raise settled", gsi, 9*time.Minute + Settle, shardmap.GSIIndex},
		{"the GSI's keys past AfterRaise", gsi, 9*time.Minute + AfterRaise, 0},
		{"the table's raise settling", table, 22*time.Minute + Settle/2, all},
		{"the table's raise settled", table, 22*time.Minute + Settle, shardmap.TableIndex},
		{"the table's keys past AfterRaise", table, 22*time.Minute + AfterRaise, 0},
		{"both, the GSI's sooner", both, 22*time.Minute + 2*Settle, shardmap.TableIndex},
	} {
		if got := Held(c.r, t0.Add(c.now)); got != c.want {
			t.Errorf("%s: held %b, want %b", c.name, got, c.want)
		}
	}
}

// TestARaiseOnItsWayHoldsTheOtherIndex: while one index's raise is
// decided and not yet in effect, the writers are still held by its old
// keys, and the other index's refusal is not read (in the quarter ramp,
// the GSI's 8 keys were read at 2 or 3 WCU/s a key behind the table's 4,
// whose raise to 12 was on its way, and raised to 13 or 14).
func TestARaiseOnItsWayHoldsTheOtherIndex(t *testing.T) {
	for _, c := range []struct {
		name      string
		cur, last Counts
		want      shardmap.Indexes
	}{
		{"nothing on its way", Counts{4, 8}, Counts{4, 8}, 0},
		{"the table's raise on its way", Counts{4, 8}, Counts{12, 8}, shardmap.GSIIndex},
		{"the GSI's raise on its way", Counts{4, 2}, Counts{4, 8}, shardmap.TableIndex},
		{"both on their way", Counts{4, 2}, Counts{12, 8}, shardmap.TableIndex | shardmap.GSIIndex},
	} {
		if got := Awaited(c.cur, c.last); got != c.want {
			t.Errorf("%s: held %b, want %b", c.name, got, c.want)
		}
	}
}

// TestAMeasureUnderHalfTheLastIsNotCredible: once a source was raised on
// what its keys were measured to take, a later measure under half of that
// (writers that have not found the new keys' ceiling yet) is not taken
// for their ceiling.
func TestAMeasureUnderHalfTheLastIsNotCredible(t *testing.T) {
	p := known(&Policy{}, 3, "q")
	first := shardmap.Measure{Rates: shardmap.Rates{Table: 34, GSI: 0}, Took: shardmap.Rates{Table: 14, GSI: 0}, Refused: shardmap.TableIndex}
	d, ok := p.ForDemand("q", t0, Counts{1, 1}, Counts{1, 1}, first, 3, true)
	if !ok || d.To.Shards != 4 {
		t.Fatalf("first raise %+v %v, want 1 -> 4 on a ceiling measured at 14", d, ok)
	}
	later := shardmap.Measure{Rates: shardmap.Rates{Table: 33, GSI: 0}, Took: shardmap.Rates{Table: 24, GSI: 0}, Refused: shardmap.TableIndex}
	if d, ok := p.ForDemand("q", t0.Add(5*time.Minute), Counts{4, 1}, Counts{4, 1}, later, 3, true); ok {
		t.Fatalf("raised again on 6 a key, under half the 14 measured before: %+v", d)
	}
}

// TestOneLowWindowDoesNotRaise: what keys that refused took of the
// writers swings from window to window with where each writer's batch
// stood. On the quarter ramp's 7 table keys of 5 WCU/s (scaled: the
// nominal 1,000 is 20), four sums read about 35 and one 18; asked 25,
// the one low window alone reads 2.6 a key, and would raise 7 -> 13. The
// mean of the same keys' readings over MeasuredFor does not raise; a
// reading under other counts, or older, is not in it.
func TestOneLowWindowDoesNotRaise(t *testing.T) {
	cur := Counts{7, 9}
	reading := func(took float64) shardmap.Measure {
		return shardmap.Measure{Rates: shardmap.Rates{Table: 25, GSI: 25}, Took: shardmap.Rates{Table: took, GSI: 40}, Refused: shardmap.TableIndex}
	}
	p := known(&Policy{KeyWCU: 20}, 2, "s")
	for i, took := range []float64{35, 34, 36, 35} {
		if d, ok := p.ForDemand("s", t0.Add(time.Duration(i)*15*time.Second), cur, cur, reading(took), 2, true); ok {
			t.Fatalf("raised on a reading of %.0f: %+v", took, d)
		}
	}
	if d, ok := p.ForDemand("s", t0.Add(time.Minute), cur, cur, reading(18), 2, true); ok {
		t.Fatalf("raised on one low window among four of 35: %+v", d)
	}
	alone := known(&Policy{KeyWCU: 20}, 2, "s")
	if d, ok := alone.ForDemand("s", t0.Add(time.Minute), cur, cur, reading(18), 2, true); !ok || d.To.Shards != 13 {
		t.Fatalf("a reading of 18 alone: %+v %v, want the table raised to 13", d, ok)
	}
	// Readings of other keys, or over MeasuredFor old, say nothing of these.
	old := known(&Policy{KeyWCU: 20}, 2, "s")
	old.ForDemand("s", t0.Add(-time.Minute), Counts{4, 9}, Counts{7, 9}, reading(35), 2, true)
	old.ForDemand("s", t0.Add(time.Minute-MeasuredFor), cur, cur, reading(35), 2, true)
	if d, ok := old.ForDemand("s", t0.Add(time.Minute), cur, cur, reading(18), 2, true); !ok || d.To.Shards != 13 {
		t.Fatalf("after readings of other counts, and older: %+v %v, want the table raised to 13", d, ok)
	}
}

// TestARampIsReadAcrossARaise: the quarter ramp's sums rose a minute
// apart from 18 to 24 WCU/s while its GSI was raised, 4/2 -> 4/8, and the
// table's keys then refused at 5 a key. The sums are what the source
// sent, whichever keys took it: the table's raise is sized for the ramp
// continued, not for the 24 read (7 keys, which the source outgrew).
func TestARampIsReadAcrossARaise(t *testing.T) {
	p := known(&Policy{KeyWCU: 20}, 2, "q")
	was, cur := Counts{4, 2}, Counts{4, 8}
	var at time.Time
	for i, sum := range []float64{18, 20, 22, 24} {
		under := was
		if i >= 2 {
			under = cur
		}
		at = t0.Add(time.Duration(i) * RampEvery)
		m := shardmap.Measure{Rates: shardmap.Rates{Table: sum, GSI: sum}, Behind: 100}
		if d, ok := p.ForDemand("q", at, under, cur, m, 2, true); ok {
			t.Fatalf("raised on a sum of %.0f: %+v", sum, d)
		}
	}
	refused := shardmap.Measure{Rates: shardmap.Rates{Table: 24, GSI: 24}, Took: shardmap.Rates{Table: 19, GSI: 19},
		Refused: shardmap.TableIndex, Behind: 100}
	d, ok := p.ForDemand("q", at.Add(20*time.Second), cur, cur, refused, 2, true)
	if !ok || d.To.Shards <= 8 || d.To.GSIShards != 8 || !strings.Contains(d.Reason, "ramp continued") {
		t.Fatalf("the table refused along the ramp, across the GSI's raise: %+v %v, want it sized for the ramp continued", d, ok)
	}
}

// TestASumRefusedOnBothReadsTheIndexWithFewerKeys: under 4/2 in the
// quarter ramp the GSI's 2 keys held both writers; one writer's pacer laid
// the refusal on the table, the other's on the GSI, and the sum read the
// table's 4 keys at 2 WCU/s a key, what the GSI let through: the table
// went to 18. Read as refused by the index with fewer keys, the GSI, the
// table stays on its nominal figure; at equal counts both are read.
func TestASumRefusedOnBothReadsTheIndexWithFewerKeys(t *testing.T) {
	both := shardmap.TableIndex | shardmap.GSIIndex
	m := shardmap.Measure{Rates: shardmap.Rates{Table: 12, GSI: 12}, Took: shardmap.Rates{Table: 8, GSI: 8}, Refused: both}
	p := known(&Policy{KeyWCU: 20}, 2, "q")
	d, ok := p.ForDemand("q", t0, Counts{4, 2}, Counts{4, 2}, m, 2, true)
	if !ok || d.To.Shards != 4 || d.To.GSIShards <= 2 {
		t.Fatalf("both refused under 4/2: %+v %v, want the GSI raised and the table left", d, ok)
	}
	if got := FewerKeys(both, Counts{7, 7}); got != both {
		t.Errorf("both refused under 7/7: read %b, want both", got)
	}
	if got := FewerKeys(shardmap.TableIndex, Counts{4, 2}); got != shardmap.TableIndex {
		t.Errorf("the table alone refused under 4/2: read %b, want the table", got)
	}
}

// TestAnIndexRefusingOnceIsNotMeasuredOnThatWindow: in the quarter ramp
// under 7/8, after the table's raise, the sums showed the table refusing
// for minutes, its keys taking about 30 WCU/s; once, one writer's pacer
// blamed the GSI in a window where the other writer's batch waited, and
// the sum read 19 of the GSI's 8 keys, 2.4 a key, and raised it 8 -> 14, a
// fourth step. (That sum showed the table refusing too, and is now read
// as the table's, fewerKeys; a sum of the GSI alone is read here.) The GSI's keys took more than that a key on average over
// the readings before it: that is the least their ceiling is.
func TestAnIndexRefusingOnceIsNotMeasuredOnThatWindow(t *testing.T) {
	cur := Counts{7, 8}
	reading := func(took float64, refused shardmap.Indexes) shardmap.Measure {
		return shardmap.Measure{Rates: shardmap.Rates{Table: 25, GSI: 25}, Took: shardmap.Rates{Table: took, GSI: took}, Refused: refused}
	}
	p := known(&Policy{KeyWCU: 20}, 2, "s")
	for i, took := range []float64{30, 34, 29, 31} {
		if d, ok := p.ForDemand("s", t0.Add(time.Duration(i)*15*time.Second), cur, cur, reading(took, shardmap.TableIndex), 2, true); ok {
			t.Fatalf("raised on a reading of %.0f: %+v", took, d)
		}
	}
	if d, ok := p.ForDemand("s", t0.Add(time.Minute), cur, cur, reading(19, shardmap.GSIIndex), 2, true); ok {
		t.Fatalf("raised on the GSI's one window refusing: %+v", d)
	}
	alone := known(&Policy{KeyWCU: 20}, 2, "s")
	if d, ok := alone.ForDemand("s", t0.Add(time.Minute), cur, cur, reading(19, shardmap.GSIIndex), 2, true); !ok || d.To.GSIShards <= 8 {
		t.Fatalf("a reading of 19 alone: %+v %v, want the GSI raised", d, ok)
	}
}

// known is p after it summed writers' measures of each of sources a
// minute before t0: their fleet is known, and a sum of as many at t0 may
// measure what keys take (a fleet that grew within a window may not).
func known(p *Policy, writers int, sources ...string) *Policy {
	for _, s := range sources {
		p.fleet(s, t0.Add(-time.Minute), writers)
	}
	return p
}

// TestAGrowingFleetDoesNotMeasureKeys: the source's writers start one by
// one, and each reports once its window is full. While the sum still
// gains writers, what keys took of those that reported is not their
// ceiling: the others took their share too (the overload simulation, on a
// sum of 2 of its 4 writers, sized its GSI to 3 keys that carried it at
// 97 %). A window after the fleet last grew, the same sum may.
func TestAGrowingFleetDoesNotMeasureKeys(t *testing.T) {
	cur := Counts{4, 1}
	two := shardmap.Measure{Rates: shardmap.Rates{Table: 363, GSI: 363}, Took: shardmap.Rates{Table: 160, GSI: 160}, Refused: shardmap.GSIIndex}
	p := &Policy{}
	p.fleet("s", t0.Add(-6*time.Second), 1)
	if d, ok := p.ForDemand("s", t0, cur, cur, two, 2, true); ok {
		t.Fatalf("a sum of 2 writers, 6 s after a sum of 1, raised: %+v", d)
	}
	if d, ok := p.ForDemand("s", t0.Add(p.window()), cur, cur, two, 2, true); !ok || d.To.GSIShards < 3 {
		t.Fatalf("the same sum a window later: %+v %v, want the GSI raised on the 160 measured", d, ok)
	}
}

// TestHeldItemsAreARefusal: once writers' pacers have learned a key's
// ceiling, DynamoDB throttles them rarely; the items a pacer holds back for
// an index's keys are that index refusing them, and count as throttles do.
func TestHeldItemsAreARefusal(t *testing.T) {
	p := &Policy{}
	if got := p.refused(Sample{Items: 500, GSIHeld: 40}, Counts{4, 1}); got != shardmap.GSIIndex {
		t.Fatalf("40 of 500 items held for the GSI key's pace: refused %d, want the GSI", got)
	}
	if got := p.refused(Sample{Items: 500, TableThrottled: 2, TableHeld: 38}, Counts{1, 4}); got != shardmap.TableIndex {
		t.Fatalf("2 throttled and 38 held for the table key's pace: refused %d, want the table", got)
	}
	if got := p.refused(Sample{Items: 500, GSIHeld: 3}, Counts{4, 1}); got != 0 {
		t.Fatalf("3 of 500 held: refused %d, want none", got)
	}
}

// rampSums asks p to decide on source's sums of GSI demand, a minute
// apart from t0 under cur, its 2 writers behind the source's arrivals by
// behind seconds, nothing refused, and returns the time of the last.
func rampSums(t *testing.T, p *Policy, source string, cur Counts, sums, behind []float64) time.Time {
	t.Helper()
	var at time.Time
	for i, sum := range sums {
		at = t0.Add(time.Duration(i) * RampEvery)
		m := shardmap.Measure{Rates: shardmap.Rates{Table: sum, GSI: sum}, Behind: behind[i]}
		if d, ok := p.ForDemand(source, at, cur, cur, m, 2, true); ok {
			t.Fatalf("raised on a sum of %.1f under its keys: %+v", sum, d)
		}
	}
	return at
}

// TestARaiseAlongARampIsSizedForIt: the quarter ramp's GSI, 2 keys of 5
// WCU/s (scaled: the nominal 1,000 is 20), read by writers whose sums
// rose a minute apart from 9 to 15 WCU/s as they fell 40 s behind the
// source, which was then sending 18 and was to reach 25 by the time a
// raise starts. Sized on the 15 read, the GSI goes to 4 keys (in the
// simulation, on a lower reading, 5), and a third GSI step followed;
// sized for the ramp continued, it goes to 8. The ramp
// alone asks for nothing: the same sums under keys that carry them raise
// none.
func TestARaiseAlongARampIsSizedForIt(t *testing.T) {
	cur := Counts{4, 2}
	sums, behind := []float64{9, 11.4, 12.7, 13.7}, []float64{2, 4, 24, 37}
	p := known(&Policy{KeyWCU: 20}, 2, "q")
	at := rampSums(t, p, "q", cur, sums, behind)
	refused := shardmap.Measure{Rates: shardmap.Rates{Table: 15.3, GSI: 15.3}, Took: shardmap.Rates{Table: 10, GSI: 10},
		Refused: shardmap.GSIIndex, Behind: 40}
	d, ok := p.ForDemand("q", at.Add(40*time.Second), cur, cur, refused, 2, true)
	if !ok || d.To.GSIShards < 7 || d.To.Shards != 4 || d.Cover.GSIShards != 3 || !strings.Contains(d.Reason, "ramp continued") {
		t.Fatalf("GSI refused along the ramp: %+v %v, want it raised to 7 or more (25 WCU/s at 70 %% of 5.5), covered at 3", d, ok)
	}
	if d.Demand < 25 || d.Demand > 32 {
		t.Errorf("sized for %.1f WCU/s, want the ramp continued, about 28", d.Demand)
	}
	flat := known(&Policy{KeyWCU: 20}, 2, "f")
	at = rampSums(t, flat, "f", cur, []float64{9, 13.5, 14, 13.7}, behind) // a step, then steady
	if d, ok := flat.ForDemand("f", at.Add(40*time.Second), cur, cur, refused, 2, true); !ok || d.To.GSIShards != 4 || d.Demand != 15.3 {
		t.Fatalf("a step, then steady: %+v %v, want the GSI sized for the 15.3 read, 4", d, ok)
	}
	// The ramp alone, under keys that carry it now, asks for nothing.
	under := known(&Policy{KeyWCU: 20}, 2, "u")
	at = rampSums(t, under, "u", cur, sums, behind)
	if d, ok := under.ForDemand("u", at.Add(40*time.Second), cur, cur, shardmap.Measure{Rates: shardmap.Rates{Table: 15.3, GSI: 15.3}, Behind: 40}, 2, true); ok {
		t.Fatalf("a ramp under its keys' nominal ceiling raised: %+v", d)
	}
}

// TestACatchUpIsNotASteeperRamp: writers three minutes behind catch up
// over three minutes, and read the source's past rise, 9 to 18 WCU/s over
// six minutes of arrivals, in three of the wall's: its slope is that of
// the arrivals, 0.025 WCU/s a second, not the wall's 0.05, and a raise is
// sized for it continued over the horizon (the writers are no longer
// behind). Sums that dip and rise are no ramp.
func TestACatchUpIsNotASteeperRamp(t *testing.T) {
	cur := Counts{4, 2}
	p := known(&Policy{KeyWCU: 20}, 2, "c")
	at := rampSums(t, p, "c", cur, []float64{9, 12, 15, 18}, []float64{180, 120, 60, 0})
	refused := shardmap.Measure{Rates: shardmap.Rates{Table: 18, GSI: 18}, Took: shardmap.Rates{Table: 10, GSI: 10}, Refused: shardmap.GSIIndex}
	d, ok := p.ForDemand("c", at, cur, cur, refused, 2, true)
	if want := 18 + 0.025*DefaultHorizon.Seconds(); !ok || math.Abs(d.Demand-want) > 0.01 {
		t.Fatalf("a catch-up: %+v %v, want sized for %.1f", d, ok, want)
	}
	noise := known(&Policy{KeyWCU: 20}, 2, "n")
	at = rampSums(t, noise, "n", cur, []float64{15, 13, 15, 18}, []float64{2, 2, 2, 2})
	if d, ok := noise.ForDemand("n", at, cur, cur, refused, 2, true); !ok || d.Demand != 18 {
		t.Fatalf("a dip, then two rises: %+v %v, want sized for the 18 read", d, ok)
	}
}
