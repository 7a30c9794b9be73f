package main

import (
	"testing"

	"github.com/shardline/shardline/testkit/clitest"
)

func TestCommandLine(t *testing.T) {
	clitest.Check(t, "shardline-bench", run, []clitest.Case{
		{Args: []string{"-events", "0"}, Code: 1, Out: "", Err: "must be positive"},
	})
}

// TestHelp: -h and --help say what it does, show examples and list the
// flags, as every shardline command's help does.
func TestHelp(t *testing.T) {
	clitest.Help(t, "shardline-bench", run, []string{"-h"}, []string{"--help"})
}
