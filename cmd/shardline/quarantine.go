package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/shardline/shardline/cmd/shardline/internal/replay"
	"github.com/shardline/shardline/internal/ddbclient"
	"github.com/shardline/shardline/internal/ddberr"
	"github.com/shardline/shardline/internal/ingest"
	"github.com/shardline/shardline/internal/item"
	"github.com/shardline/shardline/internal/params"
	"github.com/shardline/shardline/ops/plural"
)

// quarantineHelp is what "shardline quarantine -h" prints before the flags.
const quarantineHelp = `usage: shardline quarantine replay -from T [-to T] [-reason PREFIX] [-dry-run] [-v]
       shardline quarantine list -from T [-to T] [-reason PREFIX] [-raw] [-api URL | -table NAME]

replay checks the records quarantined between -from and -to (by the time
they were received) again, under the ingest function's current rules: after
MAX_EVENT_BYTES or RETENTION_DAYS was raised, or once a producer's bug is
understood. For each record:

  stored by an earlier replay   skipped
  valid now                     its events are stored as the ingest function
                                stores them, under the same keys, then the
                                record is marked "stored: N events"
  still invalid                 marked "still invalid: <reason>", written
                                only when that differs from its last mark

Records are marked, never deleted; GET /v1/quarantine shows the mark as
"replay". An event without a time gets the time its record was received (a
Kinesis record's arrival, an API request's time), as at first ingest, so it
lands on the same item however often it is replayed. A second run writes
nothing, and an interrupted run is finished by running it again. Records
refused for how an API request carried them (the body as a whole,
Content-Type, a ce-* header other than ce-time) are never stored: have the
producer send them again. Progress goes to stderr, the summary to stdout;
the exit status is 1 if any record could not be stored or marked.

list prints the records, one JSON object a line, with their marks. It
reads the table when one is configured (-table, EVENTS_TABLE, or
AWS_ENDPOINT_URL_DYNAMODB), else the HTTP API's GET /v1/quarantine (-api,
default $SHARDLINE_API or make run's http://127.0.0.1:8080; signed with
SigV4 for a deployed API, as the other API commands are): against make run,
"shardline quarantine list -from 1h" needs nothing else.

Configuration of the table: the ingest function's environment variables,
set as the deployed function has them, changing only the rule you mean to
change: EVENTS_TABLE (or -table), MAX_EVENT_BYTES, RETENTION_DAYS,
SHARDS_DEFAULT, SHARDS_OVERRIDES, GSI_SHARDS_DEFAULT, GSI_SHARDS_OVERRIDES,
QUARANTINE_SHARDS, WRITE_CONCURRENCY. AWS credentials and region come from
the SDK's default chain (AWS_PROFILE, AWS_REGION, ...). Against make run,
AWS_ENDPOINT_URL_DYNAMODB=http://127.0.0.1:8000 is all it takes: for an
endpoint on this machine the table defaults to make run's shardline-events,
and local credentials and region are used.

Permissions (IAM), each needed only on the events table's partition keys
that begin as shown (grant them with dynamodb:LeadingKeys):

  list (from the table) and replay -dry-run:
    dynamodb:Query           Q# (quarantined records), M# (shard records)
  list through the API:
    execute-api:Invoke       GET /v1/quarantine
  replay, besides what -dry-run needs:
    dynamodb:UpdateItem      Q# (the marks), M# (hour indexes)
    dynamodb:BatchWriteItem  E# (events)
    dynamodb:GetItem         M# (shard records)
    dynamodb:BatchGetItem    M# (shard records)
    dynamodb:PutItem         M# (shard records), S# (the sources catalogue)

The stack's functions are not granted this: replay is an operator's
command.

examples:
  shardline quarantine list -from 1h                        make run's, through its API
  shardline quarantine list -from 2026-11-21 -reason 'event: is '
  AWS_ENDPOINT_URL_DYNAMODB=http://127.0.0.1:8000 shardline quarantine replay -from 1h -dry-run
  MAX_EVENT_BYTES=200000 shardline quarantine replay -from 2026-11-21 -dry-run
  MAX_EVENT_BYTES=200000 shardline quarantine replay -from 2026-11-21T00:00:00Z \
      -to 2026-11-22T00:00:00Z -reason 'event: is '

flags:
`

// quarantine runs "shardline quarantine list" and "... replay".
func quarantine(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		newQuarantineFlags("replay", stderr).fs.Usage()
		return errors.New("quarantine needs a subcommand: list or replay")
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		newQuarantineFlags("replay", stderr).fs.Usage()
		return flag.ErrHelp
	case "replay":
		return quarantineReplay(args[1:], stdout, stderr)
	case "list":
		return quarantineList(args[1:], stdout, stderr)
	}
	return fmt.Errorf("quarantine %s: no such subcommand; use list or replay (shardline quarantine -h)", args[0])
}

// quarantineFlags are the flags of both subcommands.
type quarantineFlags struct {
	fs                   *flag.FlagSet
	from, to, reason     string
	table                string
	dryRun, verbose, raw bool
	progress             time.Duration
	api                  apiFlags // list only
}

func newQuarantineFlags(sub string, stderr io.Writer) *quarantineFlags {
	q := &quarantineFlags{fs: flag.NewFlagSet("shardline quarantine "+sub, flag.ContinueOnError)}
	fs := q.fs
	fs.SetOutput(stderr)
	fs.StringVar(&q.from, "from", "", "start of the range of times received, inclusive (required): RFC 3339, epoch milliseconds, a UTC day such as 2026-11-21, or a duration ago such as 1h")
	fs.StringVar(&q.to, "to", "", "end of the range, exclusive, in the same forms (default now)")
	fs.StringVar(&q.reason, "reason", "", "only records whose reason begins with this, such as 'event: is ' (too large) or 'time: '")
	fs.StringVar(&q.table, "table", "", "the events table (default $EVENTS_TABLE)")
	if sub == "replay" {
		fs.BoolVar(&q.dryRun, "dry-run", false, "check every record and print what would become of it; write nothing")
		fs.BoolVar(&q.verbose, "v", false, "print each record's outcome (a dry run always does) and the ingest log")
		fs.DurationVar(&q.progress, "progress", replay.DefaultProgressEvery, "log progress on stderr this often, and every 1,000 records")
	} else {
		fs.BoolVar(&q.raw, "raw", false, "include each record's bytes, base64")
		q.api.register(fs)
	}
	fs.Usage = func() {
		fmt.Fprint(stderr, quarantineHelp)
		fs.PrintDefaults()
	}
	return q
}

// parse reads the flags and the range they give; -to defaults to now.
func (q *quarantineFlags) parse(args []string, now time.Time) (replay.Range, error) {
	if err := q.fs.Parse(args); err != nil {
		return replay.Range{}, err
	}
	if q.fs.NArg() > 0 {
		return replay.Range{}, fmt.Errorf("%s takes no arguments, got %q; flags go before anything else", q.fs.Name(), q.fs.Args())
	}
	if q.from == "" {
		return replay.Range{}, errors.New("-from is required: the start of the range, such as 2026-11-21 or 2026-11-21T00:00:00Z")
	}
	rg := replay.Range{To: now.UTC(), Reason: q.reason}
	var err error
	if rg.From, err = parseWhen("-from", q.from, now); err != nil {
		return rg, err
	}
	if q.to != "" {
		if rg.To, err = parseWhen("-to", q.to, now); err != nil {
			return rg, err
		}
	}
	if !rg.From.Before(rg.To) {
		return rg, fmt.Errorf("-from %s is not before -to %s", rg.From.Format(time.RFC3339Nano), rg.To.Format(time.RFC3339Nano))
	}
	return rg, nil
}

// parseWhen reads a time as the read API does (RFC 3339, epoch
// milliseconds), a UTC day, or a Go duration meaning that long before now.
func parseWhen(name, s string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t, nil
	}
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return now.Add(-d).UTC(), nil
	}
	return params.ParseTime(name, s)
}

// quarantineEnv is what both subcommands run with: the ingest function's
// configuration, a DynamoDB client from the SDK's default chain, and a
// context that Ctrl-C cancels.
type quarantineEnv struct {
	cfg    ingest.Config
	client *dynamodb.Client
	ctx    context.Context
	stop   context.CancelFunc
}

// devTable is make run's table, the default for a DynamoDB on this machine.
const devTable = "shardline-events"

// dynamoEndpoint is the DynamoDB endpoint the SDK's variables set, if any.
func dynamoEndpoint() string {
	if v := os.Getenv("AWS_ENDPOINT_URL_DYNAMODB"); v != "" {
		return v
	}
	return os.Getenv("AWS_ENDPOINT_URL")
}

// localDynamo is the endpoint when it is on this machine (make run's
// DynamoDB Local), else "".
func localDynamo() string {
	e := dynamoEndpoint()
	if u, err := url.Parse(e); err == nil && u.Host != "" && isLoopback(u.Hostname()) {
		return e
	}
	return ""
}

// tableConfigured tells whether the table is configured, so that list
// reads it rather than the API.
func tableConfigured(flagTable string) bool {
	return flagTable != "" || os.Getenv(ingest.EnvTable) != "" || dynamoEndpoint() != ""
}

func newQuarantineEnv(table string) (*quarantineEnv, error) {
	local := localDynamo()
	if table == "" && os.Getenv(ingest.EnvTable) == "" && local != "" {
		table = devTable
	}
	getenv := os.Getenv
	if table != "" {
		getenv = func(k string) string {
			if k == ingest.EnvTable {
				return table
			}
			return os.Getenv(k)
		}
	}
	cfg, err := ingest.ConfigFromEnv(getenv)
	if err != nil {
		return nil, fmt.Errorf("configuration: %w. For a deployed stack, pass -table or set the ingest function's variables as it has them. "+
			"Against make run, AWS_ENDPOINT_URL_DYNAMODB=http://127.0.0.1:8000 is all it takes (the table %s, local credentials); "+
			"quarantine list also reads through make run's API with no variables at all", err, devTable)
	}
	e := &quarantineEnv{cfg: cfg}
	e.ctx, e.stop = signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	if local != "" {
		// DynamoDB Local keeps tables per region and access key unless
		// shared: make run's server and client use these.
		e.client = ddbclient.Static(local, cfg.WriteConcurrency)
		return e, nil
	}
	if e.client, err = ddbclient.New(e.ctx, cfg.WriteConcurrency); err != nil {
		e.stop()
		return nil, err
	}
	return e, nil
}

// quarantineReplay is "shardline quarantine replay".
func quarantineReplay(args []string, stdout, stderr io.Writer) error {
	q := newQuarantineFlags("replay", stderr)
	rg, err := q.parse(args, time.Now())
	if err != nil {
		return err
	}
	env, err := newQuarantineEnv(q.table)
	if err != nil {
		return err
	}
	defer env.stop()
	ingestLevel := slog.LevelWarn
	if q.verbose {
		ingestLevel = slog.LevelInfo
	}
	r := &replay.Replayer{
		Client: env.client,
		Table:  env.cfg.Table,
		Ingest: ingest.New(env.cfg, env.client, ingest.Options{
			Logger: slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: ingestLevel})),
		}),
		Log: slog.New(slog.NewTextHandler(stderr, nil)),
	}
	o := replay.Options{Range: rg, DryRun: q.dryRun, ProgressEvery: q.progress}
	if q.dryRun {
		fmt.Fprintln(stdout, "dry run: nothing is written; what a replay would do with each record:")
	}
	if q.dryRun || q.verbose {
		o.OnRecord = func(res replay.Result) { printReplayed(stdout, res) }
	}
	sum, err := r.Run(env.ctx, o)
	printReplaySummary(stdout, rg, q.dryRun, env.cfg, sum)
	return replayError(err)
}

// printReplayed prints one record's outcome.
func printReplayed(w io.Writer, res replay.Result) {
	what := res.Outcome
	if res.Err != nil {
		what = res.Err.Error()
	}
	fmt.Fprintf(w, "%-9s  %s  %s\n", res.Action, res.Record.Name(), what)
}

// printReplaySummary prints what a run did, or in a dry run would do.
func printReplaySummary(w io.Writer, rg replay.Range, dry bool, cfg ingest.Config, s replay.Summary) {
	head, stored := "replay", "stored"
	if dry {
		head, stored = "dry run (nothing written)", "to store"
	}
	fmt.Fprintf(w, "%s of table %s, records received %s to %s", head, cfg.Table,
		rg.From.Format(time.RFC3339Nano), rg.To.Format(time.RFC3339Nano))
	if rg.Reason != "" {
		fmt.Fprintf(w, " with a reason beginning %q", rg.Reason)
	}
	fmt.Fprintf(w, ", MAX_EVENT_BYTES %d, RETENTION_DAYS %d:\n", cfg.MaxEventBytes, int(cfg.Retention.Hours()/24))
	fmt.Fprintf(w, "  checked           %d\n", s.Checked)
	fmt.Fprintf(w, "  now valid         %d (%d %s %s)\n", s.NowValid, s.Events, plural.Of(s.Events, "event", "events"), stored)
	fmt.Fprintf(w, "  still invalid     %d (%d unchanged since the last replay)\n", s.StillInvalid, s.Unchanged)
	fmt.Fprintf(w, "  already replayed  %d\n", s.AlreadyReplayed)
	if s.Filtered > 0 {
		fmt.Fprintf(w, "  left out (reason) %d\n", s.Filtered)
	}
	if s.Failed > 0 {
		fmt.Fprintf(w, "  failed            %d (not stored or not marked for now)\n", s.Failed)
	}
}

// replayError says what to do about a run's error.
func replayError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, context.Canceled):
		return fmt.Errorf("quarantine replay interrupted; what was done stays done: run the same command again to finish")
	case ddberr.Classify(err) == ddberr.Refused:
		return fmt.Errorf("quarantine replay: %w; check that these credentials have the permissions that shardline quarantine -h lists", err)
	}
	return fmt.Errorf("quarantine replay: %w%s", err, tableHint(err))
}

// tableHint is what to check when the table is not there, else "".
func tableHint(err error) string {
	var nf *types.ResourceNotFoundException
	if !errors.As(err, &nf) {
		return ""
	}
	return fmt.Sprintf("; check EVENTS_TABLE (or -table) and the region, and for make run's table (%s, the default for a DynamoDB on this machine) that make run is running", devTable)
}

// listedRecord is a line of "shardline quarantine list".
type listedRecord struct {
	ReceivedAt string        `json:"received_at"`
	Reason     string        `json:"reason"`
	Origin     item.Origin   `json:"origin"`
	Bytes      int           `json:"bytes"`
	Truncated  bool          `json:"truncated,omitempty"`
	Raw        []byte        `json:"raw,omitempty"`
	Replay     *listedReplay `json:"replay,omitempty"`
}

type listedReplay struct {
	At      string `json:"at"`
	State   string `json:"state"`
	Outcome string `json:"outcome"`
}

// quarantineList is "shardline quarantine list": from the table when one
// is configured, else through the API.
func quarantineList(args []string, stdout, stderr io.Writer) error {
	q := newQuarantineFlags("list", stderr)
	rg, err := q.parse(args, time.Now())
	if err != nil {
		return err
	}
	apiSet := false
	q.fs.Visit(func(f *flag.Flag) { apiSet = apiSet || f.Name == "api" || f.Name == "sign" || f.Name == "tenant" })
	if apiSet && q.table != "" {
		return errors.New("-api and -table both given (or -sign or -tenant, which are the API's, with -table): list reads one, the API or the table; a tenant's quarantine only through the API")
	}
	if apiSet || !tableConfigured(q.table) {
		return quarantineListAPI(q, rg, stdout, stderr)
	}
	env, err := newQuarantineEnv(q.table)
	if err != nil {
		return err
	}
	defer env.stop()
	enc := json.NewEncoder(stdout)
	n := 0
	err = replay.Walk(env.ctx, env.client, env.cfg.Table, rg, func(r replay.Record) error {
		n++
		l := listedRecord{ReceivedAt: r.ReceivedAt.Format(time.RFC3339Nano), Reason: r.Reason, Origin: r.Origin,
			Bytes: len(r.Raw), Truncated: !r.Whole}
		if q.raw {
			l.Raw = r.Raw
		}
		if r.Replayed {
			l.Replay = &listedReplay{At: r.Replay.At.Format(time.RFC3339Nano), State: string(r.Replay.State), Outcome: r.Replay.Outcome}
		}
		return enc.Encode(l)
	})
	fmt.Fprintf(stderr, "%d quarantined %s\n", n, plural.Of(n, "record", "records"))
	if err != nil {
		return fmt.Errorf("quarantine list: %w%s", err, tableHint(err))
	}
	return nil
}
