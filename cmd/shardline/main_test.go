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
		{[]string{"dev", "-h"}, 0, "", "serves POST /v1/events"},
		{[]string{"dev", "extra"}, 1, "", "no arguments"},
		{[]string{"bogus"}, 2, "", "unknown command"},
		{[]string{"--help"}, 0, "shardline dev", ""},
		{nil, 2, "usage:", ""},
		{[]string{"advise", "-peak", "50000"}, 0, "shards:      72", ""},
		{[]string{"advise", "-peak", "50000"}, 0, "0.00% of writes throttled", ""},
		{[]string{"advise"}, 1, "", "must be positive"},
		{[]string{"heatsim", "-duration", "2m"}, 0, "shardline, 72 shards, 72 GSI shards", ""},
		{[]string{"heatsim", "-rate", "-1"}, 1, "", "must be positive"},
		{[]string{"bench", "-events", "0"}, 1, "", "must be positive"},
	}
	for _, c := range cases {
		var out, errb bytes.Buffer
		code := run(c.args, &out, &errb)
		if code != c.code || !strings.Contains(out.String(), c.out) || !strings.Contains(errb.String(), c.err) {
			t.Errorf("shardline %v: code %d, out %q, err %q", c.args, code, out.String(), errb.String())
		}
	}
}
