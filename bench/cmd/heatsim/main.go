// Command heatsim simulates partition heat under the seed articles' key
// designs and shardline's (docs/heatsim.md). It is its own binary, beside
// the benchmark, so that the operator's shardline carries only advise of
// the simulator's uses.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/shardline/shardline/ops/heatsim"
)

// heatHelp is what "heatsim -h" prints before the flags.
const heatHelp = `usage: heatsim [flags]

Replays a workload against a model of DynamoDB's partitions (docs/heatsim.md)
under the seed articles' key designs and shardline's, with shardline's shard
counts advised for the busiest source, and prints per design the hottest
partition's load as a fraction of its ceiling, the writes throttled, those
throttled by GSI back-pressure, and the queries a "newest 100 of 24 h" page
costs.

With -ramp it runs issue 14's ramp instead: one source rising from
-ramp-from to -rate events a second over -rise (linearly, or with
-exponential exponentially), then holding for -hold, under shardline with
the default counts fixed (4/1), with the counts advise gives for -rate
fixed, and with adaptive write sharding (internal/adapt, raises recorded
as the shard record records them, GSI counts applied sooner than table
counts as the ingest function applies them) for one writer container and
for -writers. The table is warm for the peak, so on-demand's table limits
never bind. It prints the writes throttled over the run and from the
moment the adaptive design's first raise took effect on the table, the
reads a page costs on the day, and each raise: when it was recorded, when
its GSI count and its table count took effect, and the counts. -sources,
-zipf, -burst, -duration, -article-shards, -isolate-after and -stored-gb
do not apply to the ramp (adaptive capacity isolates at once; no data is
stored).

examples:
  heatsim -duration 2m                   one source at 50,000 events/s
  heatsim -rate 80000 -sources 200 -burst 3 -json
  heatsim -ramp                          10 to 50,000 events/s over ten minutes
  heatsim -ramp -exponential -writers 16 -markdown

flags:
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run runs heat and turns its outcome into an exit code: 0 done or help
// shown, 1 failed.
func run(args []string, stdout, stderr io.Writer) int {
	if err := heat(args, stdout, stderr); err != nil && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(stderr, "heatsim:", err)
		return 1
	}
	return 0
}

// heat simulates partition heat under the seed articles' key designs and
// shardline's.
func heat(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("heatsim", flag.ContinueOnError)
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
	markdown := fs.Bool("markdown", false, "print Markdown tables (as docs/heatsim.md shows them)")
	ramp := fs.Bool("ramp", false, "run issue 14's ramp of one source up to -rate (see above)")
	rampFrom := fs.Float64("ramp-from", 10, "ramp: events per second at the start")
	rise := fs.Duration("rise", 10*time.Minute, "ramp: how long the rate rises")
	hold := fs.Duration("hold", 10*time.Minute, "ramp: how long it then holds at -rate")
	exponential := fs.Bool("exponential", false, "ramp: rise exponentially rather than linearly")
	writers := fs.Int("writers", 8, "ramp: also simulate this many writer containers, each seeing its share of the rate (1: only one)")
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
	if *ramp {
		if *rampFrom <= 0 || *rampFrom > *total || *rise < time.Second || *hold < 0 || *writers < 1 {
			fs.Usage()
			return fmt.Errorf("-ramp-from must be positive and at most -rate, -rise at least 1s, -hold not negative, -writers at least 1")
		}
		r := heatsim.Ramp{From: *rampFrom, To: *total, Rise: *rise, Hold: *hold, Exponential: *exponential, ItemKB: *kb, Start: heatsim.RampStart}
		ws := []int{1}
		if *writers > 1 {
			ws = append(ws, *writers)
		}
		return printRamp(stdout, r, heatsim.CompareRamp(r, ws...), *jsonOut, *markdown)
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
	if *markdown {
		fmt.Fprintln(stdout, "| design | hottest partition | throttled | GSI back-pressure | hottest GSI partition | reads/page |")
		fmt.Fprintln(stdout, "|---|---:|---:|---:|---:|---:|")
		for _, r := range rs {
			fmt.Fprintf(stdout, "| %s | %.2f | %.2f %% | %.2f %% | %.2f | %d |\n", r.Design, r.HottestLoad, r.ThrottledPct, r.GSIThrottledPct, r.HottestGSILoad, r.ReadRequests)
		}
		return nil
	}
	return printDesigns(stdout, rs)
}

// printRamp prints a ramp's comparison: one row per design, then the
// adaptive designs' raises.
func printRamp(stdout io.Writer, r heatsim.Ramp, rows []heatsim.RampRow, jsonOut, markdown bool) error {
	if jsonOut {
		b, _ := json.MarshalIndent(rows, "", "  ")
		fmt.Fprintln(stdout, string(b))
		return nil
	}
	shape := "linearly"
	if r.Exponential {
		shape = "exponentially"
	}
	fmt.Fprintf(stdout, "one source, %.0f to %.0f events/s of %.1f KB, %s over %v from %s UTC, then %v at %.0f;\n",
		r.From, r.To, r.ItemKB, shape, r.Rise, r.Start.Format("15:04"), r.Hold, r.To)
	fmt.Fprintf(stdout, "table and GSI warm for %.0f WCU/s (on-demand takes twice that at once)\n\n", r.To*math.Max(1, math.Ceil(r.ItemKB)))
	row := "%s\t%.2f%%\t%s\t%s\t%s\t%.2f%%\t%d\t%d\t\n"
	var tw *tabwriter.Writer
	out := stdout
	if markdown {
		fmt.Fprintln(stdout, "| design | throttled | first raise: GSI count from | table count from | throttled from then | GSI back-pressure | raises | reads/page |")
		fmt.Fprintln(stdout, "|---|---:|---:|---:|---:|---:|---:|---:|")
		row = "| %s | %.2f %% | %s | %s | %s | %.2f %% | %d | %d |\n"
	} else {
		tw = tabwriter.NewWriter(stdout, 2, 4, 2, ' ', tabwriter.AlignRight)
		out = tw
		fmt.Fprintln(tw, "design\tthrottled\tfirst raise: GSI count from\ttable count from\tthrottled from then\tGSI back-pressure\traises\treads/page\t")
	}
	end := r.Start.Add(r.Rise + r.Hold)
	for _, x := range rows {
		after := "—" // no raise took effect before the run's end
		if x.Since.Before(end) {
			after = fmt.Sprintf("%.2f%%", x.AfterPct)
			if markdown {
				after = fmt.Sprintf("%.2f %%", x.AfterPct)
			}
		}
		fmt.Fprintf(out, row, x.Design, x.ThrottledPct, clock(x.GSISince, "15:04"), x.Since.Format("15:04"), after, x.GSIThrottledPct, len(x.Raises), x.ReadRequests)
	}
	if tw != nil {
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	for _, x := range rows {
		if len(x.Raises) > 0 {
			printRaises(stdout, end, x, markdown)
		}
	}
	return nil
}

// printRaises lists an adaptive design's raises: when each was recorded,
// when its GSI count and its table count took effect, the counts, and the
// policy's reason.
func printRaises(stdout io.Writer, end time.Time, x heatsim.RampRow, markdown bool) {
	fmt.Fprintf(stdout, "\nraises of %s (recorded → GSI count from, table count from: shards/GSI shards, the policy's reason):\n\n", x.Design)
	for _, rs := range x.Raises {
		if markdown {
			fmt.Fprint(stdout, "- ")
		} else {
			fmt.Fprint(stdout, "  ")
		}
		var notes []string
		if rs.InPlace {
			notes = append(notes, "the pending step raised in place")
		}
		if !rs.From.Before(end) {
			notes = append(notes, "table count after the run's end")
		}
		note := ""
		if len(notes) > 0 {
			note = "; " + strings.Join(notes, "; ")
		}
		fmt.Fprintf(stdout, "%s → %s, %s: %d/%d (%s%s)\n", rs.Recorded.Format("15:04:05"), clock(rs.GSIFrom, "15:04"),
			rs.From.Format("15:04"), rs.Shards, rs.GSI, rs.Reason, note)
	}
}

// clock is t in layout, or "—" for the zero time.
func clock(t time.Time, layout string) string {
	if t.IsZero() {
		return "—"
	}
	return t.Format(layout)
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
