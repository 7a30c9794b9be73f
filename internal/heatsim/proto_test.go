package heatsim

import (
	"fmt"
	"math"
	"time"

	"github.com/shardline/shardline/internal/adapt"
	"github.com/shardline/shardline/pkg/bucketing"
)

// proto is a local copy of adapt.Policy's decision, for one source, with
// the changes the ramp argues for switched on one by one. It prototypes;
// internal/adapt is the policy.
type proto struct {
	// Lead plans a raise for the rate the source will have when the step
	// it records stops being the newest, StepStart(now) + a minute,
	// extrapolating the window's growth linearly, instead of for twice
	// the rate now.
	Lead bool
	// Implied takes the source's demand, when throttled, as the hot
	// index's ceiling over the share that got through (cur keys × 1,000
	// WCU / (1 − throttled)), which every writer sees alike, rather than
	// the writer's own share of the rate.
	Implied bool
	// JumpToMax makes every raise ask for the maximum.
	JumpToMax bool

	under adapt.Counts
	start time.Time
	secs  []adapt.Sample // newest last, at most the window
}

const protoWindow = 10

func (p *proto) Observe(_ string, now time.Time, cur adapt.Counts, s adapt.Sample) {
	if p.secs == nil || p.under != cur {
		p.under, p.start, p.secs = cur, now, nil
	}
	p.secs = append(p.secs, s)
	if len(p.secs) > protoWindow {
		p.secs = p.secs[1:]
	}
}

func (p *proto) Decide(_ string, now time.Time, cur, last adapt.Counts) (adapt.Decision, bool) {
	if p.under != cur {
		return adapt.Decision{}, false
	}
	var sum adapt.Sample
	for _, s := range p.secs {
		sum.Items += s.Items
		sum.WCU += s.WCU
		sum.GSIWCU += s.GSIWCU
		sum.Throttled += s.Throttled
	}
	if sum.Items < adapt.MinItems {
		return adapt.Decision{}, false
	}
	n := float64(len(p.secs))
	rate, grate := sum.WCU/n, sum.GSIWCU/n
	throttled := float64(sum.Throttled) / float64(sum.Items)
	planN, planG := 2*rate, 2*grate
	if p.Lead && len(p.secs) >= 4 {
		// Growth a second: the newer half's mean against the older's.
		h := len(p.secs) / 2
		var older, newer float64
		for i, s := range p.secs {
			if i < h {
				older += s.WCU
			} else if i >= len(p.secs)-h {
				newer += s.WCU
			}
		}
		older, newer = older/float64(h), newer/float64(h)
		slope := (newer - older) / float64(len(p.secs)-h)
		ahead := StepStart(now).Add(time.Minute).Sub(now).Seconds() + float64(h-1)/2
		at := newer + math.Max(0, slope)*ahead
		planN, planG = math.Max(planN, at), math.Max(planG, at*grate/math.Max(rate, 1e-9))
	}
	needN, needG := bucketing.ShardsFor(planN, 1), bucketing.ShardsFor(planG, 1)
	reason := "rate"
	if sum.Throttled >= adapt.MinThrottled && throttled >= adapt.ThrottleShare {
		reason = "throttled"
		loadN, loadG := rate/float64(cur.Shards), grate/float64(cur.GSIShards)
		hot := max(loadN, loadG)
		if p.Implied {
			// What got through is at most the hot index's ceiling.
			hotKeys := cur.GSIShards
			if loadN > loadG {
				hotKeys = cur.Shards
			}
			demand := float64(hotKeys) * PartitionWCU / math.Max(1-throttled, 1.0/1024)
			needN = max(needN, bucketing.ShardsFor(2*demand, 1))
			needG = max(needG, bucketing.ShardsFor(2*demand, 1))
		}
		if loadN >= hot/2 {
			needN = max(needN, adapt.Step*cur.Shards)
		}
		if loadG >= hot/2 {
			needG = max(needG, adapt.Step*cur.GSIShards)
		}
	}
	if p.JumpToMax {
		if needN > last.Shards || needG > last.GSIShards {
			needN, needG = adapt.DefaultMax, adapt.DefaultMax
		}
	}
	to := adapt.Counts{Shards: protoRaise(last.Shards, needN), GSIShards: protoRaise(last.GSIShards, needG)}
	if to == last {
		return adapt.Decision{}, false
	}
	return adapt.Decision{To: to, Rate: rate, GSIRate: grate, Throttled: throttled,
		Reason: fmt.Sprintf("%s: %.0f WCU/s, %.1f%% throttled under %d/%d", reason, rate, 100*throttled, cur.Shards, cur.GSIShards)}, true
}

// protoRaise is adapt's rule: at least double, at most the maximum.
func protoRaise(last, need int) int {
	if need <= last {
		return last
	}
	return max(last, min(max(need, 2*last), adapt.DefaultMax))
}
