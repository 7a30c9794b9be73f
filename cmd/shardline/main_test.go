package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/shardline/shardline/testkit/clitest"
)

func TestCommandLine(t *testing.T) {
	clitest.Check(t, "shardline", run, []clitest.Case{
		{Args: []string{"shards", "-peak", "50000", "-kb", "1"}, Code: 0, Out: "72\n", Err: ""},
		{Args: []string{"shards", "-peak", "500"}, Code: 0, Out: "1\n", Err: ""},
		{Args: []string{"shards"}, Code: 1, Out: "", Err: "-peak is required"},
		{Args: []string{"shards", "-h"}, Code: 0, Out: "", Err: "usage: shardline shards"},
		{Args: []string{"dev"}, Code: 2, Out: "", Err: "dev moved: run `make run` or `go run ./local/cmd/shardline-dev`"},
		{Args: []string{"dev", "-h"}, Code: 2, Out: "", Err: "go run ./local/cmd/shardline-dev"},
		{Args: []string{"help", "dev"}, Code: 2, Out: "", Err: "go run ./local/cmd/shardline-dev"},
		{Args: []string{"bogus"}, Code: 2, Out: "", Err: "unknown command"},
		{Args: []string{"--help"}, Code: 0, Out: "make run (local/cmd/shardline-dev)", Err: ""},
		{Args: []string{"--help"}, Code: 0, Out: "make bench (bench/cmd/shardline-bench)", Err: ""},
		{Args: []string{"--help"}, Code: 0, Out: "go run ./bench/cmd/heatsim", Err: ""},
		{Args: nil, Code: 2, Out: "usage:", Err: ""},
		{Args: []string{"advise", "-peak", "50000"}, Code: 0, Out: "shards:      72", Err: ""},
		{Args: []string{"advise", "-peak", "50000"}, Code: 0, Out: "0.00% of writes throttled", Err: ""},
		{Args: []string{"advise"}, Code: 1, Out: "", Err: "must be positive"},
		{Args: []string{"heatsim", "-duration", "2m"}, Code: 2, Out: "", Err: "heatsim moved: run `go run ./bench/cmd/heatsim`"},
		{Args: []string{"bench", "-events", "0"}, Code: 2, Out: "", Err: "bench moved: run `make bench` or `go run ./bench/cmd/shardline-bench`"},
		{Args: []string{"help", "bogus"}, Code: 2, Out: "", Err: "unknown command"},
	})
}

// TestEveryCommandHasHelp: each command, asked with -h, --help or "help
// <command>", says what it does, shows examples and lists its flags, and
// the usage lists every command.
func TestEveryCommandHasHelp(t *testing.T) {
	var top bytes.Buffer
	run([]string{"--help"}, &top, &top)
	for _, c := range commands {
		if !strings.Contains(top.String(), "shardline "+c.name+" ") || !strings.Contains(top.String(), c.summary) {
			t.Errorf("the usage does not list %s: %q", c.name, top.String())
		}
		clitest.Help(t, "shardline "+c.name, run, []string{c.name, "-h"}, []string{c.name, "--help"}, []string{"help", c.name})
	}
}
