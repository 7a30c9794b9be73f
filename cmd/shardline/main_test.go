package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestCommandLine(t *testing.T) {
	cases := []struct {
		args     []string
		code     int
		out, err string
	}{
		{[]string{"shards", "-peak", "50000", "-kb", "1"}, 0, "72\n", ""},
		{[]string{"shards", "-peak", "500"}, 0, "1\n", ""},
		{[]string{"shards"}, 1, "", "-peak is required"},
		{[]string{"shards", "-h"}, 0, "", "usage: shardline shards"},
		{[]string{"dev"}, 2, "", "dev moved: run `make run` or `go run ./local/cmd/shardline-dev`"},
		{[]string{"dev", "-h"}, 2, "", "go run ./local/cmd/shardline-dev"},
		{[]string{"help", "dev"}, 2, "", "go run ./local/cmd/shardline-dev"},
		{[]string{"bogus"}, 2, "", "unknown command"},
		{[]string{"--help"}, 0, "make run (local/cmd/shardline-dev)", ""},
		{[]string{"--help"}, 0, "make bench (bench/cmd/shardline-bench)", ""},
		{[]string{"--help"}, 0, "go run ./bench/cmd/heatsim", ""},
		{nil, 2, "usage:", ""},
		{[]string{"advise", "-peak", "50000"}, 0, "shards:      72", ""},
		{[]string{"advise", "-peak", "50000"}, 0, "0.00% of writes throttled", ""},
		{[]string{"advise"}, 1, "", "must be positive"},
		{[]string{"heatsim", "-duration", "2m"}, 2, "", "heatsim moved: run `go run ./bench/cmd/heatsim`"},
		{[]string{"bench", "-events", "0"}, 2, "", "bench moved: run `make bench` or `go run ./bench/cmd/shardline-bench`"},
		{[]string{"help", "bogus"}, 2, "", "unknown command"},
	}
	for _, c := range cases {
		var out, errb bytes.Buffer
		code := run(c.args, &out, &errb)
		if code != c.code || !strings.Contains(out.String(), c.out) || !strings.Contains(errb.String(), c.err) {
			t.Errorf("shardline %v: code %d, out %q, err %q", c.args, code, out.String(), errb.String())
		}
	}
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
		for _, args := range [][]string{{c.name, "-h"}, {c.name, "--help"}, {"help", c.name}} {
			var out, errb bytes.Buffer
			code := run(args, &out, &errb)
			help := errb.String()
			if code != 0 || out.Len() != 0 || !strings.HasPrefix(help, "usage: shardline "+c.name) ||
				!strings.Contains(help, "\nexamples:\n  shardline "+c.name) || !strings.Contains(help, "\nflags:\n  -") {
				t.Errorf("shardline %v: code %d, out %q, help %q", args, code, out.String(), help)
			}
		}
	}
}
