package main

import (
	"testing"

	"github.com/shardline/shardline/testkit/clitest"
)

func TestCommandLine(t *testing.T) {
	clitest.Check(t, "heatsim", run, []clitest.Case{
		{Args: []string{"-duration", "2m"}, Code: 0, Out: "shardline, 72 shards, 72 GSI shards", Err: ""},
		{Args: []string{"-rate", "-1"}, Code: 1, Out: "", Err: "must be positive"},
		{Args: []string{"-ramp", "-writers", "4", "-markdown"}, Code: 0, Out: "| shardline, adaptive from 4/1, 4 writers | ", Err: ""},
		{Args: []string{"-ramp", "-rise", "2m", "-hold", "1m"}, Code: 0, Out: "11:50:14 → 11:52", Err: ""},
		{Args: []string{"-ramp", "-writers", "1", "-markdown"}, Code: 0, Out: "→ 11:52, 11:58: 62/62 (throttled, rising:", Err: ""},
		{Args: []string{"-ramp", "-ramp-from", "0"}, Code: 1, Out: "", Err: "-ramp-from must be positive"},
	})
}

// TestHelp: -h and --help say what it does, show examples and list the
// flags, as every shardline command's help does.
func TestHelp(t *testing.T) {
	clitest.Help(t, "heatsim", run, []string{"-h"}, []string{"--help"})
}
