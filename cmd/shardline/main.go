// Command shardline is the operator's tool. Its subcommands:
//
//	shardline shards  print the shard count for a peak rate and item size
//	shardline advise  shard counts for a source, checked by the partition simulator
//	shardline quarantine list|replay
//	                  list quarantined records; replay them under the current rules
//	shardline redrive re-process the stream batches Lambda gave up on
//	shardline archive query
//	                  print the Athena query of a source's archived days
//	shardline send    send events to a Kinesis stream or the HTTP API
//	shardline query   page a source's events out of the API as NDJSON
//	shardline tail    print a source's newest events, and follow them (-f)
//	shardline counts  chart a source's event counts in the terminal
//	shardline explore the explorer page for a deployed API, signed with SigV4
//
// Run "shardline <command> -h" for a command's flags. Each command lives in
// its own file; this one only dispatches. The local pipeline is its own
// binary, local/cmd/shardline-dev (make run), and so are the benchmark,
// bench/cmd/shardline-bench (make bench), and the heat simulator's
// comparisons, bench/cmd/heatsim, so that this one carries none of them.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
)

// command is one subcommand. run parses its own flags; its -h and --help
// print what it does, its flags, and answer flag.ErrHelp.
type command struct {
	name    string
	summary string
	run     func(args []string, stdout, stderr io.Writer) error
}

var commands = []command{
	{"shards", "print the shard count for a source's peak write rate", shards},
	{"advise", "shard and GSI shard counts for a source, checked by the simulator", advise},
	{"quarantine", "list quarantined records, or replay them under the current rules", quarantine},
	{"redrive", "re-process the stream batches Lambda gave up on, from the on-failure bucket", redriveCmd},
	{"archive", "print the Athena query of a source's archived events over UTC days (archive query)", archiveCmd},
	{"send", "send events from files or stdin to a Kinesis stream or the HTTP API", sendCmd},
	{"query", "page a source's events out of GET /v1/events as NDJSON", queryCmd},
	{"tail", "print a source's newest events; with -f, follow it as tail -f does", tailCmd},
	{"counts", "chart a source's event counts (GET /v1/counts) in the terminal", countsCmd},
	{"explore", "serve the explorer page for a deployed API, signing its calls with your AWS credentials", explore},
}

// moved names the commands that left this binary for their own, and where
// they went: asked for, shardline says so rather than "unknown command".
var moved = map[string]string{
	"dev":     "dev moved: run `make run` or `go run ./local/cmd/shardline-dev`",
	"bench":   "bench moved: run `make bench` or `go run ./bench/cmd/shardline-bench`",
	"heatsim": "heatsim moved: run `go run ./bench/cmd/heatsim`",
}

// usage lists the commands.
func usage() string {
	var b strings.Builder
	b.WriteString("shardline: the operator's tools for the shardline event pipeline\n\nusage:\n")
	for _, c := range commands {
		fmt.Fprintf(&b, "  %-30s %s\n", "shardline "+c.name+" [flags]", c.summary)
	}
	b.WriteString("\nRun \"shardline <command> -h\" for the flags of a command.\n")
	b.WriteString("\nThe local pipeline, the benchmark and the heat simulator are their own commands:\n" +
		"make run (local/cmd/shardline-dev), make bench (bench/cmd/shardline-bench)\n" +
		"and go run ./bench/cmd/heatsim.\n")
	return b.String()
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run dispatches args to a command and turns its outcome into an exit
// code: 0 done or help shown, 1 failed, 2 not a command.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stdout, usage())
		return 2
	}
	name, rest := args[0], args[1:]
	switch name {
	case "-h", "--help", "help":
		if len(rest) == 0 {
			fmt.Fprint(stdout, usage())
			return 0
		}
		name, rest = rest[0], []string{"-h"} // help <command>
	}
	for _, c := range commands {
		if c.name == name {
			return exitCode(c.run(rest, stdout, stderr), stderr)
		}
	}
	if where, ok := moved[name]; ok {
		fmt.Fprintln(stderr, "shardline:", where)
		return 2
	}
	fmt.Fprintf(stderr, "shardline: unknown command %q\n\n%s", name, usage())
	return 2
}

func exitCode(err error, stderr io.Writer) int {
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	default:
		fmt.Fprintln(stderr, "shardline:", err)
		return 1
	}
}
