package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/shardline/shardline/internal/heatsim"
)

// heatHelp is what "shardline heatsim -h" prints before the flags.
const heatHelp = `usage: shardline heatsim [flags]

Replays a workload against a model of DynamoDB's partitions (docs/heatsim.md)
under the seed articles' key designs and shardline's, with shardline's shard
counts advised for the busiest source, and prints per design the hottest
partition's load as a fraction of its ceiling, the writes throttled, those
throttled by GSI back-pressure, and the queries a "newest 100 of 24 h" page
costs.

examples:
  shardline heatsim -duration 2m         one source at 50,000 events/s
  shardline heatsim -rate 80000 -sources 200 -burst 3 -json

flags:
`

// heat simulates partition heat under the seed articles' key designs and
// shardline's.
func heat(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("shardline heatsim", flag.ContinueOnError)
	fs.SetOutput(stderr)
	total := fs.Float64("rate", 50000, "events per second, all sources together")
	sources := fs.Int("sources", 1, "number of sources, Zipf-distributed")
	zipf := fs.Float64("zipf", 1.1, "Zipf exponent of the sources' rates")
	kb := fs.Float64("kb", 1, "average item size in KB")
	dur := fs.Duration("duration", 20*time.Minute, "simulated time")
	burst := fs.Float64("burst", 0, "multiply the rate by this for a minute halfway through (0: no burst)")
	articleShards := fs.Int("article-shards", 10, "shards of the seed articles' suffix designs")
	isolate := fs.Duration("isolate-after", 0, "how long adaptive capacity takes to isolate hot keys")
	stored := fs.Float64("stored-gb", 0, "data the table already holds, GB (sets the partition count's floor at 10 GB each)")
	jsonOut := fs.Bool("json", false, "print JSON")
	fs.Usage = func() {
		fmt.Fprint(stderr, heatHelp)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *total <= 0 || *sources < 1 || *kb <= 0 || *dur < time.Second || *articleShards < 1 {
		fs.Usage()
		return fmt.Errorf("-rate, -sources, -kb, -duration and -article-shards must be positive")
	}
	srcs := heatsim.Zipf(*sources, *zipf, *total)
	busiest := srcs[0].Rate
	w := heatsim.Workload{Sources: srcs, Duration: *dur, ItemKB: *kb, StoredGB: *stored, Start: time.Date(2026, 11, 22, 11, 50, 0, 0, time.UTC)}
	if *burst > 0 {
		w.BurstAt, w.BurstLength, w.BurstFactor = *dur/2, time.Minute, *burst
		busiest *= *burst
	}
	a := heatsim.Advise(busiest, *kb, *kb)
	rs := heatsim.Run(w, heatsim.Designs(*articleShards, a.Shards, a.GSIShards), *isolate)
	if *jsonOut {
		b, _ := json.MarshalIndent(rs, "", "  ")
		fmt.Fprintln(stdout, string(b))
		return nil
	}
	fmt.Fprintf(stdout, "%d source(s), %.0f events/s, %.1f KB items, %v simulated\n\n", *sources, *total, *kb, *dur)
	return printDesigns(stdout, rs)
}

// printDesigns prints one row per key design.
func printDesigns(stdout io.Writer, rs []heatsim.Result) error {
	tw := tabwriter.NewWriter(stdout, 2, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "design\thottest partition\tthrottled\tGSI back-pressure\thottest GSI partition\treads/page\t")
	for _, r := range rs {
		fmt.Fprintf(tw, "%s\t%.2f\t%.2f%%\t%.2f%%\t%.2f\t%d\t\n", r.Design, r.HottestLoad, r.ThrottledPct, r.GSIThrottledPct, r.HottestGSILoad, r.ReadRequests)
	}
	return tw.Flush()
}
