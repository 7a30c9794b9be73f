package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/shardline/shardline/internal/ddbclient"
	"github.com/shardline/shardline/internal/ingest"
	"github.com/shardline/shardline/internal/schema"
	"github.com/shardline/shardline/testkit/testddb"
	"github.com/shardline/shardline/testkit/testkinesis"
	"github.com/shardline/shardline/testkit/tests3"
)

func TestMain(m *testing.M) { testddb.MainWith(m, testkinesis.Start, tests3.Start) }

// TestQuarantineCommands: list, replay -dry-run, replay and replay again,
// configured as an operator would be: the ingest function's variables with
// MAX_EVENT_BYTES raised, and the SDK's default chain pointed at DynamoDB
// Local by AWS_ENDPOINT_URL_DYNAMODB.
func TestQuarantineCommands(t *testing.T) {
	table, endpoint := testddb.Table(t), testddb.Endpoint(t)
	h := ingest.New(ingest.DefaultConfig(table), testddb.Client(t, endpoint), ingest.Options{})
	arrival := time.Now().UTC().Add(-time.Minute).Truncate(time.Millisecond)
	big := fmt.Sprintf(`{"specversion":"1.0","id":"b1","source":"big","type":"t","data":"%s"}`, strings.Repeat("x", 100_000))
	long := fmt.Sprintf(`{"specversion":"1.0","id":"%s","source":"big","type":"t"}`, strings.Repeat("i", 300))
	var kev events.KinesisEvent
	for i, data := range []string{big, long} {
		kev.Records = append(kev.Records, events.KinesisEventRecord{
			EventSource: "aws:kinesis", EventSourceArn: "arn:aws:kinesis:us-east-1:000000000000:stream/s", EventID: fmt.Sprintf("shardId-000000000000:%d", i),
			Kinesis: events.KinesisRecord{Data: []byte(data), SequenceNumber: fmt.Sprint(i + 1),
				ApproximateArrivalTimestamp: events.SecondsEpochTime{Time: arrival}},
		})
	}
	if resp, err := h.Kinesis(context.Background(), kev); err != nil || len(resp.BatchItemFailures) > 0 {
		t.Fatalf("%v %v", err, resp.BatchItemFailures)
	}
	// The commands reach DynamoDB Local through a recorder, which notes the
	// IAM action and key prefix of every request (iam_test.go).
	rec := newRecorder(t, endpoint, dynamoCalls)
	for k, v := range map[string]string{
		"EVENTS_TABLE": table, "MAX_EVENT_BYTES": "200000",
		"AWS_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": "local", "AWS_SECRET_ACCESS_KEY": "local",
		"AWS_ENDPOINT_URL_DYNAMODB": rec.URL, "AWS_EC2_METADATA_DISABLED": "true",
		"AWS_CONFIG_FILE": os.DevNull, "AWS_SHARED_CREDENTIALS_FILE": os.DevNull,
	} {
		t.Setenv(k, v)
	}
	rng := []string{"--from", arrival.Add(-time.Hour).Format(time.RFC3339), "--to", fmt.Sprint(time.Now().Add(time.Minute).UnixMilli())}
	sh := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := run(append(args, rng...), &out, &errb)
		return code, "\n" + out.String(), errb.String()
	}
	const (
		read   = "list (from the table) and replay -dry-run"
		writes = "replay, besides what -dry-run needs"
	)
	iam := newPermissionCheck(t, help(t, "quarantine", "replay"), read, writes)
	steps := []struct {
		args []string
		out  []string
		iam  []string // the sections of -h's permissions that apply
	}{
		{[]string{"quarantine", "list"}, []string{`"reason":"event: is 1000`, `"reason":"id: is 300 bytes`}, []string{read}},
		{[]string{"quarantine", "replay", "--dry-run"}, []string{"\ndry run: nothing is written; what a replay would do with each record:\n", "dry run (nothing written)", "MAX_EVENT_BYTES 200000",
			"\nstored     " + arrival.Format(time.RFC3339Nano) + " shardId-000000000000 1  stored: 1 event\n",
			"\ninvalid    ", "now valid         1 (1 event to store)", "still invalid     1 (0 unchanged"}, []string{read}},
		{[]string{"quarantine", "replay"}, []string{"now valid         1 (1 event stored)", "still invalid     1 (0 unchanged"}, []string{read, writes}},
		{[]string{"quarantine", "replay"}, []string{"checked           1", "now valid         0", "still invalid     1 (1 unchanged", "already replayed  1"}, []string{read, writes}},
		{[]string{"quarantine", "list", "-reason", "event: is "}, []string{`"replay":{"at":"`, `"state":"stored","outcome":"stored: 1 event"`}, []string{read}},
	}
	for _, s := range steps {
		code, out, errs := sh(s.args...)
		for _, w := range s.out {
			if code != 0 || !strings.Contains(out, w) {
				t.Fatalf("shardline %v: code %d, out %q, err %q; want %q in the output", s.args, code, out, errs, w)
			}
		}
		iam.check(fmt.Sprint("shardline ", s.args), rec.take(), s.iam...)
	}
	iam.allUsed(map[string]string{"execute-api:Invoke on GET /v1/quarantine": "TestQuarantineListThroughAPI checks it"})
	// The event is stored once, with its record's arrival as its time.
	_, out, _ := sh("quarantine", "list", "-reason", "event: is ")
	var l struct {
		ReceivedAt string `json:"received_at"`
	}
	if json.Unmarshal([]byte(out), &l) != nil || l.ReceivedAt != arrival.Format(time.RFC3339Nano) {
		t.Fatalf("list: %s", out)
	}

	t.Setenv("EVENTS_TABLE", "no-such-table")
	if code, _, errs := sh("quarantine", "replay"); code != 1 || !strings.Contains(errs, "shardline: quarantine replay: read the quarantine of table no-such-table") {
		t.Errorf("a missing table: code %d, %q", code, errs)
	}
	// No table named, and DynamoDB on this machine: make run's table, not
	// there in this test's DynamoDB Local; said, with what to check.
	t.Setenv("EVENTS_TABLE", "")
	if code, _, errs := sh("quarantine", "replay"); code != 1 || !strings.Contains(errs, "read the quarantine of table shardline-events") ||
		!strings.Contains(errs, "that make run is running") {
		t.Errorf("no table: code %d, %q", code, errs)
	}
	if code, out, errs := sh("quarantine", "list", "-table", table); code != 0 || strings.Count(out, "\n") != 3 || !strings.Contains(errs, "2 quarantined records") {
		t.Errorf("-table: code %d, %q, %q", code, out, errs)
	}
}

// TestQuarantineCommandLine: mistakes are refused with a message that says
// what to do, before anything is read.
func TestQuarantineCommandLine(t *testing.T) {
	cases := []struct {
		args []string
		err  string
	}{
		{[]string{"quarantine"}, "quarantine needs a subcommand: list or replay"},
		{[]string{"quarantine", "bogus"}, "no such subcommand; use list or replay"},
		{[]string{"quarantine", "replay"}, "-from is required"},
		{[]string{"quarantine", "replay", "-from", "yesterday"}, `-from: "yesterday" is neither an RFC 3339 time`},
		{[]string{"quarantine", "list", "-from", "2026-11-22", "-to", "2026-11-21"}, "-from 2026-11-22T00:00:00Z is not before -to 2026-11-21T00:00:00Z"},
		{[]string{"quarantine", "replay", "-from", "2026-11-22", "extra"}, "takes no arguments"},
		{[]string{"quarantine", "list", "-dry-run", "-from", "2026-11-22"}, "flag provided but not defined: -dry-run"},
	}
	for _, c := range cases {
		var out, errb bytes.Buffer
		if code := run(c.args, &out, &errb); code != 1 || !strings.Contains(errb.String(), c.err) {
			t.Errorf("shardline %v: code %d, err %q; want %q", c.args, code, errb.String(), c.err)
		}
	}
	var out, errb bytes.Buffer
	if code := run([]string{"quarantine", "replay", "-h"}, &out, &errb); code != 0 || !strings.Contains(errb.String(), "dynamodb:BatchWriteItem  E# (events)") {
		t.Errorf("replay -h: code %d, %q", code, errb.String())
	}
}

// TestQuarantineListThroughAPI: with no table configured, list reads make
// run's API (here $SHARDLINE_API), with no AWS variables at all: the same
// lines as from the table, the reason filter, -raw, and a range longer
// than the API's 31 days read window by window.
func TestQuarantineListThroughAPI(t *testing.T) {
	localEnv(t)
	base := localAPI(t, false)
	resp, err := http.Post(base+"/v1/events", "application/json", strings.NewReader(
		`[{"id":"ok","source":"cli/quar","type":"t"},{"id":"no-type","source":"cli/quar"},{"id":"late","source":"cli/quar","type":"t","time":"2001-01-01T00:00:00Z"}]`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("POST: %d", resp.StatusCode)
	}
	// list reaches the API through a recorder, which notes the route each
	// request invokes, as execute-api:Invoke authorizes it (iam_test.go).
	rec := newRecorder(t, base, apiCalls)
	iam := newPermissionCheck(t, help(t, "quarantine", "list"), "list through the API")
	t.Setenv(envAPI, rec.URL)

	code, out, errs := sh("quarantine", "list", "-from", "1h")
	iam.check("shardline quarantine list", rec.take(), "list through the API")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 2 || !strings.Contains(errs, "2 quarantined records (from "+rec.URL+"/v1/quarantine)") ||
		!strings.Contains(out, `"reason":"type: `) || !strings.Contains(out, `"reason":"time: `) || !strings.Contains(out, `"request_id":"`) ||
		strings.Contains(out, `"raw":`) {
		t.Fatalf("list: code %d\nout %s\nerr %s", code, out, errs)
	}
	code, out, errs = sh("quarantine", "list", "-from", "1080h", "-reason", "type: ", "-raw")
	var l listedRecord
	if code != 0 || strings.Count(out, "\n") != 1 || json.Unmarshal([]byte(out), &l) != nil ||
		!strings.Contains(string(l.Raw), `"id":"no-type"`) || l.Bytes != len(l.Raw) || *l.Origin.Index != 1 {
		t.Fatalf("list -reason -raw over 45 days: code %d\nout %s\nerr %s", code, out, errs)
	}
	// Both sources named: refused, saying why.
	if code, _, errs := sh("quarantine", "list", "-from", "1h", "-api", base, "-table", "t"); code != 1 || !strings.Contains(errs, "-api and -table both given") {
		t.Fatalf("both: code %d, %s", code, errs)
	}
	// No API there: said, with the other way.
	t.Setenv(envAPI, "http://127.0.0.1:1")
	if code, _, errs := sh("quarantine", "list", "-from", "1h"); code != 1 || !strings.Contains(errs, "make run serves one") || !strings.Contains(errs, "pass -table") {
		t.Fatalf("no API: code %d, %s", code, errs)
	}
}

// TestQuarantineLocalDefaults: against make run's DynamoDB Local, the
// endpoint is all replay and list need: the table defaults to make run's,
// with local credentials and region; with nothing set, the error says so.
func TestQuarantineLocalDefaults(t *testing.T) {
	localEnv(t)
	endpoint := testddb.Endpoint(t)
	client := ddbclient.Static(endpoint, 4)
	if err := schema.Create(context.Background(), client, devTable); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { // other tests expect make run's table not to be there
		if _, err := client.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(devTable)}); err != nil {
			t.Error(err)
		}
	})
	h := ingest.New(ingest.DefaultConfig(devTable), client, ingest.Options{})
	req := events.APIGatewayV2HTTPRequest{Body: `{"id":"x","source":"cli/local"}`, Headers: map[string]string{"content-type": "application/json"}}
	req.RequestContext.HTTP.Method = "POST"
	req.RawPath = ingest.Route
	if resp, err := h.HTTP(context.Background(), req); err != nil || resp.StatusCode != 400 {
		t.Fatalf("ingest: %v %d %s", err, resp.StatusCode, resp.Body)
	}

	if code, _, errs := sh("quarantine", "replay", "-from", "1h", "-dry-run"); code != 1 ||
		!strings.Contains(errs, "EVENTS_TABLE is required") || !strings.Contains(errs, "AWS_ENDPOINT_URL_DYNAMODB=http://127.0.0.1:8000 is all it takes") {
		t.Fatalf("nothing set: code %d, %s", code, errs)
	}
	t.Setenv("AWS_ENDPOINT_URL_DYNAMODB", endpoint)
	code, out, errs := sh("quarantine", "list", "-from", "1h")
	if code != 0 || strings.Count(out, "\n") != 1 || !strings.Contains(out, `"reason":"type: `) {
		t.Fatalf("list: code %d\nout %s\nerr %s", code, out, errs)
	}
	code, out, errs = sh("quarantine", "replay", "-from", "1h", "-dry-run")
	if code != 0 || !strings.Contains(out, "dry run (nothing written) of table "+devTable) || !strings.Contains(out, "checked           1") {
		t.Fatalf("replay -dry-run: code %d\nout %s\nerr %s", code, out, errs)
	}
}
