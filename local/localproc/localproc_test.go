package localproc

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
)

// server is an engine: Node's HTTP server on "{port}".
func server(t *testing.T) Spec {
	t.Helper()
	node, err := Node()
	if err != nil {
		t.Fatal(err)
	}
	return Spec{Name: "node's HTTP server", Path: node, Args: []string{"-e",
		"require('http').createServer((q, r) => r.end('engine')).listen(+process.argv[1], '127.0.0.1')", "{port}"}}
}

// TestPortTakenIsNotReady: an engine whose port another process holds
// exits (EADDRINUSE), while the other process answers HTTP on the port.
// Before the check, the engine passed for ready and its tests failed later
// ("s3rver … exited: listen EADDRINUSE", a make test beside a busy loop).
func TestPortTakenIsNotReady(t *testing.T) {
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("not the engine")) }))
	defer other.Close()
	port := other.Listener.Addr().(*net.TCPAddr).Port
	p, err := start(context.Background(), server(t), port)
	if err == nil {
		p.Close()
		t.Fatalf("started on a port another process holds")
	}
	if !errors.Is(err, errPortTaken) {
		t.Fatalf("%v, want errPortTaken", err)
	}
}

// TestStartAnswersOnItsOwnPort: with a port picked for it, the engine is
// ready on a port it holds, and what answers there is the engine.
func TestStartAnswersOnItsOwnPort(t *testing.T) {
	p, err := Start(context.Background(), server(t))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	resp, err := http.Get(p.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || string(b) != "engine" {
		t.Fatalf("%q %v, want the engine's answer", b, err)
	}
}
