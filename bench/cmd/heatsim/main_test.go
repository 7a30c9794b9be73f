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
		{[]string{"-duration", "2m"}, 0, "shardline, 72 shards, 72 GSI shards", ""},
		{[]string{"-rate", "-1"}, 1, "", "must be positive"},
		{[]string{"-ramp", "-writers", "4", "-markdown"}, 0, "| shardline, adaptive from 4/1, 4 writers | ", ""},
		{[]string{"-ramp", "-rise", "2m", "-hold", "1m"}, 0, "11:50:14 → 11:52", ""},
		{[]string{"-ramp", "-writers", "1", "-markdown"}, 0, "→ 11:52, 11:58: 62/62 (throttled, rising:", ""},
		{[]string{"-ramp", "-ramp-from", "0"}, 1, "", "-ramp-from must be positive"},
	}
	for _, c := range cases {
		var out, errb bytes.Buffer
		code := run(c.args, &out, &errb)
		if code != c.code || !strings.Contains(out.String(), c.out) || !strings.Contains(errb.String(), c.err) {
			t.Errorf("heatsim %v: code %d, out %q, err %q", c.args, code, out.String(), errb.String())
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
		if code != 0 || out.Len() != 0 || !strings.HasPrefix(help, "usage: heatsim") ||
			!strings.Contains(help, "\nexamples:\n  heatsim") || !strings.Contains(help, "\nflags:\n  -") {
			t.Errorf("heatsim %v: code %d, out %q, help %q", args, code, out.String(), help)
		}
	}
}
