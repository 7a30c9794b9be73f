package main

import (
	"testing"

	"github.com/shardline/shardline/testkit/clitest"
)

func TestCommandLine(t *testing.T) {
	clitest.Check(t, "shardline-dev", run, []clitest.Case{
		{Args: []string{"-h"}, Code: 0, Out: "", Err: "serves POST /v1/events"},
		{Args: []string{"extra"}, Code: 1, Out: "", Err: "no arguments"},
	})
}

// TestHelp: -h and --help say what it does, show examples and list the
// flags, as every shardline command's help does.
func TestHelp(t *testing.T) {
	clitest.Help(t, "shardline-dev", run, []string{"-h"}, []string{"--help"})
}
