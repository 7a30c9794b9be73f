package main

import (
	"flag"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/shardline/shardline/ops/heatsim"
)

// adviseHelp is what "shardline advise -h" prints before the flags.
const adviseHelp = `usage: shardline advise -peak N [-kb K] [-gsi-kb G] [-page P] [-window W]

Prints the shard counts to configure for a source writing N events a second
(SHARDS_OVERRIDES and GSI_SHARDS_OVERRIDES), from the seed articles' formula
planned at 70% of the 1,000 WCU partition ceiling, then simulates ten minutes
at that peak with a 20% burst (see docs/heatsim.md) and reports the hottest
partition's load and any throttling, and what a dashboard page costs.

examples:
  shardline advise -peak 50000 -kb 1
  shardline advise -peak 2000 -kb 4 -gsi-kb 0.2 -page 500 -window 6h
                                         a lean GSI, bigger pages, shorter range

flags:
`

// advise prints shard and GSI shard counts for a source and checks them
// with the partition simulator.
func advise(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("shardline advise", flag.ContinueOnError)
	fs.SetOutput(stderr)
	peak := fs.Float64("peak", 0, "peak events per second of the source (required)")
	kb := fs.Float64("kb", 1, "average item size in KB")
	gsiKB := fs.Float64("gsi-kb", 0, "average GSI item size in KB (default: -kb; the GSI projects the event)")
	page := fs.Int("page", 100, "events a dashboard page shows")
	window := fs.Duration("window", 24*time.Hour, "the dashboard's time range")
	fs.Usage = func() {
		fmt.Fprint(stderr, adviseHelp)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *peak <= 0 || *kb <= 0 || *page < 1 || *window <= 0 {
		fs.Usage()
		return fmt.Errorf("-peak, -kb, -page and -window must be positive")
	}
	if *gsiKB <= 0 {
		*gsiKB = *kb
	}
	a := heatsim.Advise(*peak, *kb, *gsiKB)
	perHour := *peak * 3600
	hours := math.Min(math.Ceil(window.Hours()), math.Ceil(float64(*page)/perHour))
	days := math.Min(math.Ceil(window.Hours()/24)+1, math.Ceil(float64(*page)/(perHour*24))+1)
	fmt.Fprintf(stdout, "shards:      %d   (SHARDS_OVERRIDES or shardline:shardOverrides)\n", a.Shards)
	fmt.Fprintf(stdout, "GSI shards:  %d   (GSI_SHARDS_OVERRIDES or shardline:gsiShardOverrides)\n", a.GSIShards)
	fmt.Fprintf(stdout, "simulated:   hottest partition at %.0f%% of its ceiling, GSI at %.0f%%; %.2f%% of writes throttled, %.2f%% by GSI back-pressure\n",
		100*a.Simulated.HottestLoad, 100*a.Simulated.HottestGSILoad, a.Simulated.ThrottledPct, a.Simulated.GSIThrottledPct)
	fmt.Fprintf(stdout, "a page of %d newest events in %v: about %.0f GSI queries, or %.0f base-table queries with consistent=true\n",
		*page, *window, math.Max(1, hours)*float64(a.GSIShards), math.Max(1, days-1)*float64(a.Shards))
	return nil
}
