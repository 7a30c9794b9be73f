// Package localproc runs a local engine as a child process: DynamoDB Local
// (a jar) or an npm package in tools/ (kinesalite, s3rver), on a free port,
// ready once it answers HTTP, stopped with its parent.
package localproc

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/shardline/shardline/local/syncbuf"
)

// ErrNoNode is returned when node is not on PATH.
var ErrNoNode = errors.New("node is not on PATH: the local engines run on Node.js 20 or later (install it, then run `npm ci --prefix tools`)")

// FindUp looks for rel (such as "kinesalite/cli.js") under
// tools/node_modules, then node_modules, in the working directory and each
// of its parents, and returns the first that exists.
func FindUp(rel string) (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("find %s: %w", rel, err)
	}
	for {
		for _, nm := range []string{filepath.Join("tools", "node_modules"), "node_modules"} {
			p := filepath.Join(dir, nm, rel)
			if _, err := os.Stat(p); err == nil {
				return p, nil
			}
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("%s is not installed: run `npm ci --prefix tools` in the repository root (make does it for you)", rel)
		}
		dir = parent
	}
}

// Node is the path of the node binary.
func Node() (string, error) {
	p, err := exec.LookPath("node")
	if err != nil {
		return "", ErrNoNode
	}
	return p, nil
}

// StartNode runs script with node -e from the folder whose node_modules
// holds the npm package pkg, so that require finds it. "{port}" in args is
// replaced by the port, 0 picking a free one; log is as Spec.Log.
func StartNode(ctx context.Context, pkg, script string, args []string, port int, log *os.File) (*Proc, error) {
	return StartNodeFlags(ctx, pkg, nil, script, args, port, log)
}

// StartNodeFlags is StartNode with node's own flags before the script, such
// as --openssl-legacy-provider.
func StartNodeFlags(ctx context.Context, pkg string, flags []string, script string, args []string, port int, log *os.File) (*Proc, error) {
	manifest, err := FindUp(filepath.Join(pkg, "package.json"))
	if err != nil {
		return nil, err
	}
	node, err := Node()
	if err != nil {
		return nil, err
	}
	return Start(ctx, Spec{
		Name: pkg,
		Path: node,
		Args: append(append(append([]string(nil), flags...), "-e", script), args...),
		Dir:  filepath.Dir(filepath.Dir(filepath.Dir(manifest))), // node_modules' parent
		Port: port,
		Log:  log,
	})
}

// FreePort asks the kernel for a port nobody listens on.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("pick a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Proc is a running engine.
type Proc struct {
	// Endpoint is its URL, such as http://127.0.0.1:4567.
	Endpoint string

	name string
	cmd  *exec.Cmd
	done chan struct{}
	err  error
	out  *syncbuf.Buffer
	once sync.Once
}

// Spec says how to start an engine.
type Spec struct {
	Name string   // for messages, such as "kinesalite"
	Path string   // the program, such as node
	Args []string // its arguments; "{port}" is replaced by the port
	Dir  string   // its working directory
	Port int      // 0 picks a free one
	// Log receives the engine's output; nil keeps it in memory, shown if
	// the engine fails to start.
	Log *os.File
	// Ready bounds the wait for the first HTTP answer; default 30 s.
	Ready time.Duration
}

// Start launches the engine and waits until it answers any HTTP request.
// With a port picked for it (Spec.Port 0), an engine that another process
// beat to its port (it exits saying the address is in use, or another
// process holds the socket listening there) is started again on another,
// up to tries times: FreePort's port is free when asked, not when the
// engine binds it, and test binaries start engines side by side.
func Start(ctx context.Context, s Spec) (*Proc, error) {
	if s.Port != 0 {
		return start(ctx, s, s.Port)
	}
	var err error
	for range tries {
		var port int
		if port, err = FreePort(); err != nil {
			return nil, fmt.Errorf("%s: %w", s.Name, err)
		}
		var p *Proc
		if p, err = start(ctx, s, port); err == nil || !errors.Is(err, errPortTaken) {
			return p, err
		}
	}
	return nil, err
}

// tries bounds the ports Start tries for an engine.
const tries = 5

// errPortTaken is an engine's port taken by another process.
var errPortTaken = errors.New("its port was taken by another process")

// start launches the engine on port and waits until it answers.
func start(ctx context.Context, s Spec, port int) (*Proc, error) {
	args := make([]string, len(s.Args))
	for i, a := range s.Args {
		args[i] = a
		if a == "{port}" {
			args[i] = strconv.Itoa(port)
		}
	}
	p := &Proc{Endpoint: "http://127.0.0.1:" + strconv.Itoa(port), name: s.Name, done: make(chan struct{}), out: &syncbuf.Buffer{}}
	p.cmd = exec.Command(s.Path, args...)
	p.cmd.Dir = s.Dir
	dieWithParent(p.cmd)
	if s.Log != nil {
		p.cmd.Stdout, p.cmd.Stderr = s.Log, s.Log
	} else {
		p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	}
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", s.Name, err)
	}
	go func() { p.err = p.cmd.Wait(); close(p.done) }()
	ready := s.Ready
	if ready <= 0 {
		ready = 30 * time.Second
	}
	err := p.waitReady(ctx, ready)
	if err == nil {
		// An answer on the port may be another process's.
		var ours bool
		if ours, err = listens(p.cmd.Process.Pid, port); err == nil && !ours {
			err = fmt.Errorf("%s at %s: %w", s.Name, p.Endpoint, errPortTaken)
		}
	}
	if err != nil {
		p.Close()
		if inUse(p.out.String()) { // Close has stopped it: its output is whole
			err = fmt.Errorf("%w: %w", errPortTaken, err)
		}
		return nil, err
	}
	return p, nil
}

// inUse says whether an engine's output says its address was in use
// (Node's EADDRINUSE, Java's BindException).
func inUse(out string) bool {
	return strings.Contains(out, "EADDRINUSE") || strings.Contains(out, "Address already in use")
}

func (p *Proc) waitReady(ctx context.Context, limit time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	client := &http.Client{Timeout: time.Second}
	for {
		// Any HTTP answer means the engine is up; the AWS emulators refuse
		// a bare GET with a 4xx.
		resp, err := client.Get(p.Endpoint)
		if err == nil {
			resp.Body.Close()
			return nil
		}
		select {
		case <-p.done:
			return fmt.Errorf("%s exited before it was ready (%s): %v\n%s", p.name, p.Endpoint, p.err, p.out.String())
		case <-ctx.Done():
			return fmt.Errorf("%s did not answer at %s: %w\n%s", p.name, p.Endpoint, ctx.Err(), p.out.String())
		case <-time.After(25 * time.Millisecond):
		}
	}
}

// Exited is nil while the engine runs; once it has exited (before Close),
// it says how, with what the engine printed when it kept its output.
func (p *Proc) Exited() error {
	select {
	case <-p.done:
		return fmt.Errorf("%s at %s exited: %v\n%s", p.name, p.Endpoint, p.err, p.out.String())
	default:
		return nil
	}
}

// Close stops the engine and waits for it to exit.
func (p *Proc) Close() error {
	p.once.Do(func() {
		if p.cmd.Process != nil {
			_ = p.cmd.Process.Kill()
		}
		<-p.done
	})
	return nil
}
