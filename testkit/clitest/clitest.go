// Package clitest checks a command-line program as its tests call it:
// arguments in, an exit code and its standard output and error out. Every
// shardline binary's tests use it, so that each checks its commands and
// its help by the same rules.
package clitest

import (
	"bytes"
	"io"
	"strings"
	"testing"
)

// Run is a program's entry point without the process: what main passes
// to os.Exit.
type Run func(args []string, stdout, stderr io.Writer) int

// Case is one command line and what it must give: the exit code, and text
// its standard output and error must contain.
type Case struct {
	Args     []string
	Code     int
	Out, Err string
}

// Check runs each case through run; name is the program's, for errors.
func Check(t *testing.T, name string, run Run, cases []Case) {
	t.Helper()
	for _, c := range cases {
		var out, errb bytes.Buffer
		code := run(c.Args, &out, &errb)
		if code != c.Code || !strings.Contains(out.String(), c.Out) || !strings.Contains(errb.String(), c.Err) {
			t.Errorf("%s %v: code %d, out %q, err %q", name, c.Args, code, out.String(), errb.String())
		}
	}
}

// Help checks that each of argss asks run for the help of usage (a
// program, or a program and its command: "shardline tail"): code 0,
// nothing on standard output, and on standard error a help that begins
// "usage: <usage>", shows examples of it and lists its flags.
func Help(t *testing.T, usage string, run Run, argss ...[]string) {
	t.Helper()
	for _, args := range argss {
		var out, errb bytes.Buffer
		code := run(args, &out, &errb)
		help := errb.String()
		if code != 0 || out.Len() != 0 || !strings.HasPrefix(help, "usage: "+usage) ||
			!strings.Contains(help, "\nexamples:\n  "+usage) || !strings.Contains(help, "\nflags:\n  -") {
			t.Errorf("%v: code %d, out %q, help %q", args, code, out.String(), help)
		}
	}
}
