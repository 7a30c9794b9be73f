// Command withddb runs a command beside one DynamoDB Local: it starts the
// engine, runs the command with SHARDLINE_TEST_DYNAMODB (testddb.SharedEnv)
// set to the engine's URL, stops the engine when the command ends and exits
// as the command did. The command's test binaries then start no engine of
// their own, and each keeps its tables in a database of its own.
//
// make test runs its lanes under it: two dozen test binaries use DynamoDB
// Local, and each one's own Java process cost about 2.5 CPU-seconds to start
// and more to warm up.
//
// Usage:
//
//	withddb command [argument ...]
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"

	"github.com/shardline/shardline/local/ddblocal"
	"github.com/shardline/shardline/testkit/testddb"
)

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "-help" {
		fmt.Fprintln(os.Stderr, "usage: withddb command [argument ...]\n\n"+
			"Starts DynamoDB Local (in memory), runs the command with "+testddb.SharedEnv+"\n"+
			"set to its URL, stops it when the command ends and exits as the command did.")
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	s, err := ddblocal.Start(ctx, ddblocal.Options{LongLived: true})
	if err != nil {
		fmt.Fprintln(os.Stderr, "withddb:", err)
		return 1
	}
	defer s.Close()
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), testddb.SharedEnv+"="+s.Endpoint)
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "withddb:", err)
		return 1
	}
	// An interrupt reaches the command from the terminal too; wait for it
	// to end, then stop the engine.
	err = cmd.Wait()
	if ex := (*exec.ExitError)(nil); errors.As(err, &ex) {
		if code := ex.ExitCode(); code >= 0 {
			return code
		}
		return 1
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "withddb:", err)
		return 1
	}
	return 0
}
