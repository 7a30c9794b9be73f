// Command shardline-bench measures shardline against the naive design
// (make bench). It is its own binary so that the operator's shardline
// carries no benchmark harness (docs/performance.md).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/shardline/shardline/bench/benchrun"
)

// benchHelp is what "shardline-bench -h" prints before the flags.
const benchHelp = `usage: shardline-bench [flags]

Runs, side by side: shardline's ingest handler on a 10,000-record Kinesis
batch and the seed articles' write path (one PutItem per event, sequential,
one partition key) against DynamoDB Local and against a stub endpoint with a
fixed latency; dashboard queries on the GSI and scatter paths; what exact
counts cost (the counter's writes per event of a busy source, the day and
month charts of GET /v1/counts, a hot source's counter item), with a line
per target of issue 10 saying whether it is met; the Kinesis producer's
events/s and PutRecords requests per 1,000 events, with and without KPL
aggregation, against one PutRecord per event, on kinesalite; and the cold
start of both functions; and what a million events cost, all in, at issue
22's three reference workloads beside the seed design and Firehose → S3
(cost.md; -cost-only runs that alone). Prints a table and writes it as
JSON and Markdown.
Needs Java, Node and the npm tools (make bench installs them).

examples:
  shardline-bench                        what make bench runs
  shardline-bench -events 2000 -counts=false -out ''   a quick run, printed only
  shardline-bench -cost-only             the cost model alone: bench/results/cost.md and cost.json

flags:
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run runs bench and turns its outcome into an exit code: 0 done or help
// shown, 1 failed.
func run(args []string, stdout, stderr io.Writer) int {
	if err := bench(args, stdout, stderr); err != nil && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(stderr, "shardline-bench:", err)
		return 1
	}
	return 0
}

// bench measures shardline against the naive design (make bench).
func bench(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("shardline-bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	o := benchrun.Options{Out: stdout}
	fs.StringVar(&o.ResultsDir, "out", "bench/results", "directory for results.json and results.md (empty: print only)")
	fs.DurationVar(&o.Latency, "latency", 5*time.Millisecond, "the stub endpoint's latency per request")
	fs.IntVar(&o.Events, "events", 10000, "records in shardline's Kinesis batch")
	fs.IntVar(&o.NaiveCap, "naive-events", 1000, "events the naive sequential path writes")
	withCounts := fs.Bool("counts", true, "measure what exact counts cost (about two minutes)")
	withCost := fs.Bool("cost", true, "price a million events at the three reference workloads (about two minutes)")
	costOnly := fs.Bool("cost-only", false, "run the cost model alone, writing cost.md and cost.json only")
	workload := fs.String("workload", "", "with -cost-only: price only the workloads whose name contains this")
	copiesOnly := fs.Bool("copies-only", false, "measure alone what the GSI copy costs and saves at the three workloads (pages on each path, GSI_COPIES settings); prints only")
	producerEvents := fs.Int("producer-events", benchrun.DefaultProducerOptions.Events, "events each Kinesis producer design puts on kinesalite (0: skip the producer benchmark)")
	fs.Usage = func() {
		fmt.Fprint(stderr, benchHelp)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if o.Events < 1 || o.NaiveCap < 1 {
		return fmt.Errorf("-events and -naive-events must be positive")
	}
	if *withCounts {
		o.Counts = benchrun.DefaultCountsOptions
	}
	if *producerEvents < 0 {
		return fmt.Errorf("-producer-events must be 0 (skip) or more")
	}
	if *producerEvents > 0 {
		o.Producer = benchrun.DefaultProducerOptions
		o.Producer.Events = *producerEvents
		o.Producer.PutRecords = min(o.Producer.PutRecords, *producerEvents)
	}
	if *withCost || *costOnly {
		o.Cost = benchrun.DefaultCostOptions
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *workload != "" {
		var ws []benchrun.CostWorkload
		for _, w := range o.Cost.Workloads {
			if strings.Contains(w.Name, *workload) {
				ws = append(ws, w)
			}
		}
		if len(ws) == 0 {
			return fmt.Errorf("-workload %q names no workload", *workload)
		}
		o.Cost.Workloads = ws
	}
	if *copiesOnly {
		_, err := benchrun.RunCopies(ctx, o)
		return err
	}
	if *costOnly {
		_, err := benchrun.RunCost(ctx, o)
		return err
	}
	_, err := benchrun.Run(ctx, o)
	return err
}
