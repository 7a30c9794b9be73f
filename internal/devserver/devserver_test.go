package devserver

import (
	"bytes"
	"context"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shardline/shardline/internal/openapi"
	"github.com/shardline/shardline/internal/openapi/openapitest"
)

// syncBuffer is a bytes.Buffer safe to write from the server's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestRun is `make run` end to end: DynamoDB Local starts, the samples are
// replayed and printed, the API takes a new event, and Ctrl-C stops it all.
func TestRun(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out syncBuffer
	done := make(chan error, 1)
	serving := make(chan string, 1)
	go func() {
		done <- Run(ctx, Options{
			Addr:      "127.0.0.1:0",
			Table:     "shardline-events",
			Samples:   "../../events",
			Getenv:    os.Getenv,
			Out:       &out,
			OnServing: func(url string) { serving <- url },
		})
	}()
	var base string
	select {
	case base = <-serving:
	case err := <-done:
		t.Fatalf("Run ended early: %v\n%s", err, out.String())
	}
	for _, want := range []string{"stored 13 events", "quarantined 3 records", "auth #1 (eu/west)", "202 {\"accepted\":4",
		"-> 2 events, plan gsi", `"id":"ord-7f3aa0"`, "next page: add &cursor=",
		"sources in the last two days", "13 of 13 stored events counted"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	client := openapitest.Client(t, openapitest.Any) // every exchange checked against the OpenAPI document
	resp, err := client.Post(base+"/v1/events", "application/json",
		strings.NewReader(`{"id":"x-1","source":"curl","type":"com.example.hello","data":{"hello":"world"}}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 202 || string(body) != `{"accepted":1,"rejected":[]}` {
		t.Fatalf("POST: %d %s", resp.StatusCode, body)
	}
	resp, err = client.Get(base + "/v1/events?source=curl&consistent=true")
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"id":"x-1"`) {
		t.Fatalf("GET: %d %s", resp.StatusCode, body)
	}
	resp, err = client.Get(base + "/nowhere")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 404 {
		t.Fatalf("unknown route: %d", resp.StatusCode)
	}
	resp, err = client.Get(base + openapi.Path)
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != string(openapi.Document()) {
		t.Fatalf("GET %s: %d, %d bytes", openapi.Path, resp.StatusCode, len(body))
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	if !strings.Contains(out.String(), "stopped DynamoDB Local") {
		t.Fatalf("DynamoDB Local not stopped:\n%s", out.String())
	}
}
