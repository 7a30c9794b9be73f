package heatsim

import (
	"fmt"
	"math"
	"time"

	"github.com/shardline/shardline/internal/ingest"
)

// Ramp is a source that turns hot: From events a second rising to To over
// Rise, linearly or exponentially, then holding at To for Hold.
type Ramp struct {
	From, To    float64
	Rise, Hold  time.Duration
	Exponential bool
	ItemKB      float64
	Start       time.Time
}

// RampStart is when the ramps of the docs and tests begin: 11:50 UTC, so
// that the run crosses an hour boundary, where the GSI's keys change.
var RampStart = time.Date(2026, 11, 22, 11, 50, 0, 0, time.UTC)

// IssueRamp is issue 14's ramp: 10 to 50,000 one-kilobyte events a second
// over ten minutes, then ten minutes at 50,000.
func IssueRamp(exponential bool) Ramp {
	return Ramp{From: 10, To: 50000, Rise: 10 * time.Minute, Hold: 10 * time.Minute, Exponential: exponential, ItemKB: 1, Start: RampStart}
}

// Rate is the ramp's events a second at elapsed.
func (r Ramp) Rate(elapsed time.Duration) float64 {
	if elapsed >= r.Rise || r.Rise <= 0 {
		return r.To
	}
	f := elapsed.Seconds() / r.Rise.Seconds()
	if r.Exponential {
		return r.From * math.Pow(r.To/r.From, f)
	}
	return r.From + (r.To-r.From)*f
}

// Workload is the ramp as a one-source workload. The table and its GSI are
// warm for the peak (they served To before, so on-demand takes up to twice
// it at once and starts with partitions for that): the ramp measures the
// partition keys, not the table's on-demand limits.
func (r Ramp) Workload() Workload {
	return Workload{Sources: []Source{{Name: "hot", Rate: r.To}}, Duration: r.Rise + r.Hold, Start: r.Start, ItemKB: r.ItemKB,
		Profile: func(e time.Duration) float64 { return r.Rate(e) / r.To }}
}

// RampRow is one design's outcome under a ramp.
type RampRow struct {
	Result
	// Since is when the first adaptive design's first raise took effect on
	// the table, its step's start (this design's own, for an adaptive
	// one); AfterPct is the share of writes throttled from then to the
	// end, in percent. GSISince, for an adaptive design, is when that
	// raise's GSI count applied, sooner (shardmap.InEffect).
	Since    time.Time `json:"since"`
	GSISince time.Time `json:"gsi_since,omitzero"`
	AfterPct float64   `json:"throttled_after_first_raise_pct"`
}

// CompareRamp runs the ramp under shardline with ingest's default counts
// fixed, with the counts Advise gives for the ramp's peak fixed, and with
// adaptive sharding from the default counts for each number of writer
// containers in writers (1 if none).
func CompareRamp(r Ramp, writers ...int) []RampRow {
	if len(writers) == 0 {
		writers = []int{1}
	}
	a := Advise(r.To, r.ItemKB, r.ItemKB)
	fixed := func(n, g int, why string) Design {
		return Design{Name: fmt.Sprintf("shardline, fixed %d/%d (%s)", n, g, why),
			Keys:  func(s string, t time.Time) ([]string, []string) { return shardlineKeys(s, t, n, g) },
			Reads: func(perHour float64) int { return gsiReads(perHour, g) }}
	}
	ds := []Design{fixed(ingest.DefaultShards, ingest.DefaultGSIShards, "defaults"), fixed(a.Shards, a.GSIShards, "advised")}
	for _, w := range writers {
		ds = append(ds, AdaptiveDesign(Adaptive{Writers: w}))
	}
	rs := Run(r.Workload(), ds, 0)
	end := r.Start.Add(r.Rise + r.Hold)
	since := end
	for _, res := range rs {
		if len(res.Raises) > 0 {
			since = res.Raises[0].From
			break
		}
	}
	out := make([]RampRow, len(rs))
	for i, res := range rs {
		row := RampRow{Result: res, Since: since}
		if ds[i].Adapt != nil {
			row.Since = end
			if len(res.Raises) > 0 {
				row.Since, row.GSISince = res.Raises[0].From, res.Raises[0].GSIFrom
			}
		}
		row.AfterPct = res.ThrottledPctFrom(row.Since)
		out[i] = row
	}
	return out
}
