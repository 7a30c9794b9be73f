package testddb

import (
	"testing"

	"github.com/shardline/shardline/local/localproc"
)

// Running is an engine a test binary runs once (DynamoDB Local,
// kinesalite, a local SQS), started from TestMain through MainWith.
type Running struct {
	name, main string
	proc       *localproc.Proc
	url        string // an engine another process runs (HoldURL)
}

// NewRunning is an engine called name, started by the TestMain call main
// (for the message when a test finds it not running).
func NewRunning(name, main string) *Running { return &Running{name: name, main: main} }

// Hold keeps p as the running engine and returns how to stop it: an
// Engine's answer.
func (r *Running) Hold(p *localproc.Proc) func() {
	r.proc = p
	return func() { p.Close() }
}

// HoldURL keeps url, an engine that another process started and stops,
// as the running engine.
func (r *Running) HoldURL(url string) { r.url = url }

// Endpoint is the engine's URL. The test fails when the engine was not
// started, or has exited since (an engine another process runs, HoldURL,
// fails the requests sent to it instead).
func (r *Running) Endpoint(t testing.TB) string {
	t.Helper()
	if r.url != "" {
		return r.url
	}
	if r.proc == nil {
		t.Fatalf("%s is not running; call %s from TestMain", r.name, r.main)
	}
	if err := r.proc.Exited(); err != nil {
		t.Fatal(err)
	}
	return r.proc.Endpoint
}
