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
		{[]string{"-events", "0"}, 1, "", "must be positive"},
	}
	for _, c := range cases {
		var out, errb bytes.Buffer
		code := run(c.args, &out, &errb)
		if code != c.code || !strings.Contains(out.String(), c.out) || !strings.Contains(errb.String(), c.err) {
			t.Errorf("shardline-bench %v: code %d, out %q, err %q", c.args, code, out.String(), errb.String())
		}
	}
}

// TestHelp: -h and --help say what it does, show examples and list the
// flags, as every shardline command's help does.
func TestHelp(t *testing.T) {
	for _, args := range [][]string{{"-h"}, {"--help"}} {
		var out, errb bytes.Buffer
		code := run(args, &out, &errb)
		help := errb.String()
		if code != 0 || out.Len() != 0 || !strings.HasPrefix(help, "usage: shardline-bench") ||
			!strings.Contains(help, "\nexamples:\n  shardline-bench") || !strings.Contains(help, "\nflags:\n  -") {
			t.Errorf("shardline-bench %v: code %d, out %q, help %q", args, code, out.String(), help)
		}
	}
}
