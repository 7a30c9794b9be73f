package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/shardline/shardline/internal/kpl"
	"github.com/shardline/shardline/local/kinesisread"
	"github.com/shardline/shardline/testkit/testkinesis"
)

// TestSendAndQuery: shardline send posts an NDJSON file (an array on one
// line, events without id or time, one invalid event) and a pretty-printed
// JSON array to make run's server; the invalid event is printed with its
// file:line and fails the exit status; shardline query pages every stored
// event out once, in order, and -max stops with a cursor that goes on.
func TestSendAndQuery(t *testing.T) {
	localEnv(t)
	base := localAPI(t, false)
	now := time.Now().UTC().Add(-10 * time.Minute)
	var lines []string
	for i := range 240 {
		lines = append(lines, event("cli/q", fmt.Sprintf("q-%03d", i), "t", now.Add(time.Duration(i)*time.Second)))
	}
	lines = append(lines, "["+event("cli/q", "q-240", "t", now)+","+event("cli/q", "q-241", "t", now)+"]")
	lines = append(lines, event("cli/q", "", "t", now))                          // an id is made
	lines = append(lines, `{"specversion":"1.0","id":"bad-1","source":"cli/q"}`) // no type: rejected
	nd := writeFile(t, "events.ndjson", lines...)
	arr := writeFile(t, "events.json", "[\n  "+event("cli/q", "q-300", "t", now)+",\n\n  "+event("cli/q", "q-301", "t", time.Time{})+"\n]")

	rec := newRecorder(t, base, apiCalls) // notes each route invoked (iam_test.go)
	iam := newPermissionCheck(t, help(t, "send"), "send -api")
	code, out, errs := sh("send", "-api", rec.URL, nd, arr)
	iam.check("shardline send -api", rec.take(), "send -api")
	if code != 1 || !strings.Contains(errs, fmt.Sprintf(`rejected %s:243 (id "bad-1"): type: `, nd)) ||
		!strings.Contains(out, "246 events read") || !strings.Contains(out, "sent      245") || !strings.Contains(out, "rejected  1") ||
		!strings.Contains(out, "failed    0") || !strings.Contains(errs, "1 event was not stored") {
		t.Fatalf("send: code %d\nout %s\nerr %s", code, out, errs)
	}

	code, out, errs = sh("query", "-api", base, "-source", "cli/q", "-from", "1h", "-order", "asc", "-limit", "100")
	if code != 0 {
		t.Fatalf("query: code %d, err %s", code, errs)
	}
	got := ndjson(t, out)
	want := append(ids("q", 0, 242), "q-300", "q-301")
	if len(got) != 245 || !containsAll(got, want) {
		t.Fatalf("query: %d events, want 245 (%v)", len(got), got)
	}
	if !strings.Contains(out, `"n":12345678901234567890`) {
		t.Fatal("data's number lost digits")
	}

	// -max stops, and the printed flags go on from there: every event once.
	code, out, errs = sh("query", "-api", base, "-source", "cli/q", "-from", "1h", "-max", "150", "-consistent")
	m := regexp.MustCompile(`add -from (\S+) -to (\S+) -cursor "([^"]+)" to go on`).FindStringSubmatch(errs)
	if code != 0 || m == nil || len(ndjson(t, out)) != 150 {
		t.Fatalf("query -max: code %d, %d events, err %s", code, len(ndjson(t, out)), errs)
	}
	first := ndjson(t, out)
	code, out, errs = sh("query", "-api", base, "-source", "cli/q", "-from", m[1], "-to", m[2], "-cursor", m[3], "-consistent")
	rest := ndjson(t, out)
	if code != 0 || len(rest) != 95 {
		t.Fatalf("query -cursor: code %d, %d events, err %s", code, len(rest), errs)
	}
	for _, id := range first {
		if slices.Contains(rest, id) {
			t.Fatalf("%s on both sides of the cursor", id)
		}
	}

	// A bad parameter: the API's 400 names it.
	if code, _, errs := sh("query", "-api", base, "-source", "cli/q", "-order", "sideways"); code != 1 || !strings.Contains(errs, "GET /v1/events: 400 Bad Request: order: ") {
		t.Fatalf("bad order: code %d, err %s", code, errs)
	}
}

func containsAll(got, want []string) bool {
	for _, w := range want {
		if !slices.Contains(got, w) {
			return false
		}
	}
	return true
}

// TestSendBadInput: a line that is not JSON, or JSON that is not an event,
// stops send with its file:line; what came before is sent.
func TestSendBadInput(t *testing.T) {
	localEnv(t)
	base := localAPI(t, false)
	now := time.Now().UTC()
	for _, c := range []struct {
		lines []string
		err   string
	}{
		{[]string{event("cli/bad", "b-1", "t", now), "", `{"id": "b-2", oops}`}, ":3: not JSON: invalid character 'o'"},
		{[]string{event("cli/bad", "b-1", "t", now), `42`}, ":2: a number, not an event (a JSON object) or an array of events"},
		{[]string{`[`, `  ` + event("cli/bad", "b-1", "t", now) + `,`, `  "x"`, `]`}, ":3: a string, not an event"},
		{[]string{event("cli/bad", "b-1", "t", now), `{"id": "b-2",`}, ":2: the input ends inside the JSON value that begins here"},
	} {
		p := writeFile(t, "bad.ndjson", c.lines...)
		code, out, errs := sh("send", "-api", base, p)
		if code != 1 || !strings.Contains(errs, p+c.err) || !strings.Contains(errs, "the events before it were sent") || !strings.Contains(out, "sent      1") {
			t.Errorf("%q: code %d\nout %s\nerr %s", c.lines, code, out, errs)
		}
	}
	if code, _, errs := sh("send", "-api", base, "/nonexistent/x.ndjson"); code != 1 || !strings.Contains(errs, "open input: open /nonexistent/x.ndjson: no such file") {
		t.Errorf("missing file: code %d, err %s", code, errs)
	}
	stdin = strings.NewReader(event("cli/bad", "s-1", "t", now) + "\n")
	defer func() { stdin = nil }()
	if code, out, errs := sh("send", "-api", base, "-progress"); code != 0 || !strings.Contains(out, "sent      1") || !strings.HasPrefix(out, "1 event read, to POST ") {
		t.Errorf("stdin: code %d\nout %s\nerr %s", code, out, errs)
	}
}

// TestSendKinesis: shardline send -stream puts events on a stream in
// kinesalite with the Kinesis producer, aggregated, the SDK's chain
// configured by flags alone (a loopback -endpoint needs no credentials).
func TestSendKinesis(t *testing.T) {
	localEnv(t)
	arn := testkinesis.Stream(t, 2)
	stream, _ := kinesisread.ParseARN(arn)
	now := time.Now().UTC()
	var lines []string
	for i := range 300 {
		lines = append(lines, event("cli/k", fmt.Sprintf("k-%03d", i), "t", now))
	}
	lines = append(lines, `{"specversion":"1.0","source":"cli/k","type":"t"}`)
	p := writeFile(t, "k.ndjson", lines...)
	// send reaches kinesalite through a recorder, which notes the IAM
	// action of every request (iam_test.go).
	rec := newRecorder(t, testkinesis.Endpoint(t), kinesisCalls)
	iam := newPermissionCheck(t, help(t, "send"), "send -stream")
	code, out, errs := sh("send", "-stream", stream.Name, "-endpoint", rec.URL, "-aggregate", p)
	iam.check("shardline send -stream", rec.take(), "send -stream")
	iam.allUsed(map[string]string{"execute-api:Invoke on POST /v1/events": "TestSendAndQuery checks -api"})
	if code != 0 || !strings.Contains(out, "301 events read") || !strings.Contains(out, "to Kinesis stream "+stream.Name) || !strings.Contains(out, "sent      301") {
		t.Fatalf("send -stream: code %d\nout %s\nerr %s", code, out, errs)
	}
	// Read back: every event once, in a few aggregated records.
	c := testkinesis.Client(t, testkinesis.Endpoint(t))
	shards, err := kinesisread.Shards(context.Background(), c, stream)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	records := 0
	for _, s := range shards {
		it, err := kinesisread.Iterator(context.Background(), c, stream, aws.ToString(s.ShardId), kinesisread.TrimHorizon)
		if err != nil {
			t.Fatal(err)
		}
		page, err := kinesisread.Read(context.Background(), c, stream, aws.ToString(s.ShardId), it, 1000)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range page.Records {
			records++
			subs, err := kpl.Deaggregate(r.Kinesis.Data, 0)
			if err != nil {
				t.Fatal(err)
			}
			for _, sub := range subs {
				var e struct{ ID string }
				json.Unmarshal(sub.Data, &e)
				got = append(got, e.ID)
			}
		}
	}
	if len(got) != 301 || !containsAll(got, ids("k", 0, 300)) || records > 10 {
		t.Fatalf("the stream holds %d events in %d records", len(got), records)
	}
	// No region and no endpoint: said.
	if code, _, errs := sh("send", "-stream", stream.Name, p); code != 1 || !strings.Contains(errs, "set AWS_REGION") {
		t.Fatalf("no region: code %d, err %s", code, errs)
	}
}

// TestSendKinesisFailsFast: a stream that is not there, or a Kinesis that
// is not running, stops send before it sends anything, with one request
// and a message that says what to check, rather than after every retry of
// every batch.
func TestSendKinesisFailsFast(t *testing.T) {
	localEnv(t)
	p := writeFile(t, "k.ndjson", event("cli/k", "k-1", "t", time.Now()))
	code, out, errs := sh("send", "-stream", "no-such-stream", "-endpoint", testkinesis.Endpoint(t), p)
	if code != 1 || out != "" || !strings.Contains(errs, `the stream "no-such-stream" is not there (Kinesis at `+testkinesis.Endpoint(t)+`)`) ||
		!strings.Contains(errs, "check -stream") {
		t.Fatalf("missing stream: code %d\nout %s\nerr %s", code, out, errs)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String()
	ln.Close() // nothing listens there now
	code, out, errs = sh("send", "-stream", "shardline-events", "-endpoint", closed, p)
	if code != 1 || out != "" || !strings.Contains(errs, "cannot reach Kinesis at "+closed) || !strings.Contains(errs, "make run is running") {
		t.Fatalf("no Kinesis: code %d\nout %s\nerr %s", code, out, errs)
	}
}

// TestSendKinesisLocalNeverAsksInstanceMetadata: with no credentials set
// and a loopback endpoint, send uses local static credentials: it never
// asks the EC2 instance metadata service (a request off the machine, on
// a laptop a wait for nothing), here a server that counts what it gets.
func TestSendKinesisLocalNeverAsksInstanceMetadata(t *testing.T) {
	localEnv(t)
	var asked atomic.Int32
	imds := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		http.NotFound(w, r)
	}))
	defer imds.Close()
	t.Setenv("AWS_EC2_METADATA_DISABLED", "")
	t.Setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", imds.URL)

	arn := testkinesis.Stream(t, 1)
	stream, _ := kinesisread.ParseARN(arn)
	p := writeFile(t, "k.ndjson", event("cli/k", "k-1", "t", time.Now()), `{"specversion":"1.0","source":"cli/k","type":"t","data":"`+strings.Repeat("x", 1<<20)+`"}`)
	code, out, errs := sh("send", "-stream", stream.Name, "-endpoint", testkinesis.Endpoint(t), p)
	if n := asked.Load(); n != 0 {
		t.Fatalf("the instance metadata service was asked %d times", n)
	}
	// The summary speaks of the stream: put, not stored; the rejected one
	// never left the machine, and nothing speaks of the API quarantining it.
	if code != 1 || !strings.Contains(out, "sent      1 in ") || !strings.Contains(out, "put on the stream") ||
		!strings.Contains(out, "rejected  1: refused here and never sent") || strings.Contains(out+errs, "API quarantine") ||
		!strings.Contains(errs, "1 event was not put on the stream") {
		t.Fatalf("send: code %d\nout %s\nerr %s", code, out, errs)
	}
}
