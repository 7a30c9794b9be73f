package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/shardline/shardline/internal/counts"
	"github.com/shardline/shardline/internal/ingest"
	"github.com/shardline/shardline/internal/query"
	"github.com/shardline/shardline/local/ddbstreams"
	"github.com/shardline/shardline/local/httpapi"
	"github.com/shardline/shardline/testkit/openapitest"
	"github.com/shardline/shardline/testkit/testddb"
)

// localAPI serves the real ingest and query handlers on a new table in
// DynamoDB Local, as make run does, each exchange checked against the
// OpenAPI document. withCounts makes the table with its stream and runs
// the counter function on it. It returns the API's base URL.
func localAPI(t *testing.T, withCounts bool) string {
	t.Helper()
	var table string
	if withCounts {
		table = testddb.StreamTable(t)
	} else {
		table = testddb.Table(t)
	}
	client := testddb.Client(t, testddb.Endpoint(t))
	h := ingest.New(ingest.DefaultConfig(table), client, ingest.Options{})
	qcfg, err := query.ConfigFromEnv(func(k string) string {
		if k == query.EnvTable {
			return table
		}
		return ""
	})
	if err != nil {
		t.Fatal(err)
	}
	qh := query.New(qcfg, client, query.Options{})
	checked := func(fn httpapi.Func) httpapi.Func {
		return func(ctx context.Context, req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
			resp, err := fn(ctx, req)
			if err == nil {
				openapitest.CheckHTTP(t, openapitest.Any, req, resp)
			}
			return resp, err
		}
	}
	mux := httpapi.NewMux()
	mux.Handle("POST "+ingest.Route, checked(h.HTTP))
	for _, r := range []string{query.EventsRoute, query.CountsRoute, query.QuarantineRoute} {
		mux.Handle("GET "+r, checked(qh.HTTP))
	}
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	if withCounts {
		ctx, cancel := context.WithCancel(context.Background())
		arn, err := ddbstreams.StreamARN(ctx, client, table)
		if err != nil {
			t.Fatal(err)
		}
		f := counts.New(counts.Config{Table: table, Retention: 30 * 24 * time.Hour}, client, counts.Options{Logger: slog.New(slog.DiscardHandler)})
		p := &ddbstreams.Poller{
			Client: ddbstreams.Static(testddb.Endpoint(t)), StreamARN: arn, Window: 100 * time.Millisecond, BatchSize: 1000,
			Filter: func(r events.DynamoDBEventRecord) bool {
				pk, ok := r.Change.Keys["pk"]
				return r.EventName == "INSERT" && ok && strings.HasPrefix(pk.String(), "E#")
			},
			Handler: func(ctx context.Context, ev events.DynamoDBTimeWindowEvent) error {
				_, err := f.Invoke(ctx, ev)
				return err
			},
		}
		// The scheduled fold, as make run plays it (more often than the
		// stack's 20 s): the counts are read once folded.
		lsm := &counts.LSM{Client: client, Table: table, Retention: 30 * 24 * time.Hour}
		folds := func() {
			for ctx.Err() == nil {
				if _, err := lsm.Fold(ctx); err != nil && ctx.Err() == nil {
					t.Errorf("fold: %v", err)
					return
				}
				select {
				case <-ctx.Done():
				case <-time.After(100 * time.Millisecond):
				}
			}
		}
		done, folded := make(chan struct{}), make(chan struct{})
		go func() { defer close(done); p.Run(ctx) }()
		go func() { defer close(folded); folds() }()
		t.Cleanup(func() { cancel(); <-done; <-folded })
	}
	return srv.URL
}

// localEnv points the SDK's default chain at nothing of this machine's:
// no profile, no instance metadata.
func localEnv(t *testing.T) {
	for k, v := range map[string]string{
		"AWS_EC2_METADATA_DISABLED": "true", "AWS_CONFIG_FILE": os.DevNull, "AWS_SHARED_CREDENTIALS_FILE": os.DevNull,
		"AWS_PROFILE": "", "AWS_REGION": "", "AWS_DEFAULT_REGION": "", "AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": "",
		"AWS_SESSION_TOKEN": "", "AWS_ENDPOINT_URL": "", "AWS_ENDPOINT_URL_KINESIS": "", envAPI: "",
	} {
		t.Setenv(k, v)
	}
}

// sh runs shardline with args.
func sh(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := run(args, &out, &errb)
	return code, out.String(), errb.String()
}

// writeFile writes lines into a file of the test's and returns its path.
func writeFile(t *testing.T, name string, lines ...string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// event is a CloudEvent of source, in JSON; a zero at leaves its time out.
func event(source, id, typ string, at time.Time) string {
	m := map[string]any{"specversion": "1.0", "source": source, "type": typ, "data": map[string]any{"n": json.Number("12345678901234567890")}}
	if id != "" {
		m["id"] = id
	}
	if !at.IsZero() {
		m["time"] = at.UTC().Format(time.RFC3339Nano)
	}
	b, _ := json.Marshal(m)
	return string(b)
}

// ndjson reads lines of events and their ids, failing on a duplicate.
func ndjson(t *testing.T, out string) []string {
	t.Helper()
	var ids []string
	seen := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if line == "" {
			continue
		}
		var e struct {
			ID   string          `json:"id"`
			Data json.RawMessage `json:"data"`
		}
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		if seen[e.ID] {
			t.Fatalf("event %s printed twice", e.ID)
		}
		seen[e.ID] = true
		ids = append(ids, e.ID)
	}
	return ids
}

// eventually polls cond until it holds; two minutes without fail the test.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func ids(prefix string, from, to int) []string {
	var out []string
	for i := from; i < to; i++ {
		out = append(out, fmt.Sprintf("%s-%03d", prefix, i))
	}
	return out
}
