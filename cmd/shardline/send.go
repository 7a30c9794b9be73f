package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/shardline/shardline/ops/plural"
)

// sendHelp is what "shardline send -h" prints before the flags.
const sendHelp = `usage: shardline send (-stream NAME | -api URL) [-aggregate] [-progress] [FILE ...]

Reads events (CloudEvents in JSON) from the files, or from stdin when there
are none or for "-", and sends them to a Kinesis stream (-stream, with
pkg/producer's Kinesis producer: PutRecords batches, retries of the failed
records only, optional KPL aggregation) or to the HTTP API (POST /v1/events
in batches of up to 1,000 events whose body Lambda can take, 503 and 429
retried). An input is NDJSON (one event, or an array of events, a line), a
JSON array of events, or one event; pretty-printed JSON is fine.

An event without an id gets a UUIDv7 and one without a time the present
time before it is first sent, so that retries store it once. (Sending the
same input again stores its events again unless each has its own id and
time.)

Each event the API refuses is printed to stderr with the file and line it
came from and the reason; the API quarantines it. Each event not stored
after the retries is printed too. A line that is not JSON, or JSON that is
not an object or an array of objects, stops the reading there with an
error naming file:line; what was read before it is sent. A progress line
goes to stderr every second when stderr is a terminal, or with -progress;
the summary (sent, rejected, failed) to stdout. The exit status is 1 when
an event was rejected or failed, or the input stopped early.

A Kinesis stream takes any bytes: an invalid event is quarantined by the
ingest function, not refused here (GET /v1/quarantine lists it); only an
event no Kinesis record can carry (over 1 MiB) is rejected here, and never
sent. Kinesis is reached with the AWS SDK's default configuration
(AWS_PROFILE, AWS_REGION, AWS_ENDPOINT_URL_KINESIS, ...), or -endpoint.
make run's kinesalite is at http://127.0.0.1:4567: an endpoint on this
machine needs no credentials or region (local ones are used when none are
set, and the EC2 instance metadata service is never asked). Before sending,
send checks that the stream is there (DescribeStreamSummary, at most 5 s),
and stops at once, saying what to check, when it is not or Kinesis does not
answer.

Permissions (IAM):

  send -stream:
    kinesis:DescribeStreamSummary  the stream
    kinesis:PutRecords             the stream
  send -api:
    execute-api:Invoke             POST /v1/events

` + apiHelp + `
examples:
  shardline send -api http://127.0.0.1:8080 events.ndjson
  kubectl logs my-pod | jq -c '{source:"my-pod",type:"log",data:.}' | shardline send -progress
  shardline send -stream shardline-events -endpoint http://127.0.0.1:4567 -aggregate events.json
  AWS_PROFILE=prod shardline send -stream Shardline-Events1234 -aggregate big.ndjson

flags:
`

// stdin is what "-" and no FILE read; tests set it.
var stdin io.Reader = os.Stdin

// sendFlags are the flags of "shardline send".
type sendFlags struct {
	fs                  *flag.FlagSet
	api                 apiFlags
	stream, endpoint    string
	aggregate, progress bool
	files               []string
}

func newSendFlags(stderr io.Writer) *sendFlags {
	f := &sendFlags{fs: commandFlags("send", sendHelp, stderr)}
	fs := f.fs
	f.api.register(fs)
	fs.StringVar(&f.stream, "stream", "", "send to this Kinesis stream (a name or an ARN) instead of the API")
	fs.StringVar(&f.endpoint, "endpoint", "", "the Kinesis endpoint, such as make run's http://127.0.0.1:4567 (default: the SDK's)")
	fs.BoolVar(&f.aggregate, "aggregate", false, "with -stream, pack events into KPL aggregated records")
	fs.BoolVar(&f.progress, "progress", false, "print a progress line every second even when stderr is not a terminal")
	return f
}

func (f *sendFlags) parse(args []string) error {
	if err := f.fs.Parse(args); err != nil {
		return err
	}
	f.files = f.fs.Args()
	if len(f.files) == 0 {
		f.files = []string{"-"}
	}
	apiSet := false
	f.fs.Visit(func(fl *flag.Flag) { apiSet = apiSet || fl.Name == "api" })
	switch {
	case f.stream != "" && apiSet:
		return errors.New("-stream and -api both given: send to one, the stream or the API")
	case f.stream == "" && (f.aggregate || f.endpoint != ""):
		return errors.New("-aggregate and -endpoint are for a Kinesis stream: add -stream NAME")
	case f.stream != "" && f.api.tenant != "":
		return errors.New("-tenant is for the API's routes: to send to a tenant's own stream, give -stream its name (the stack's output Tenant<Id>StreamName)")
	}
	return nil
}

// sendCmd is "shardline send".
func sendCmd(args []string, stdout, stderr io.Writer) error {
	f := newSendFlags(stderr)
	if err := f.parse(args); err != nil {
		return err
	}
	ctx, stop := interruptible()
	defer stop()
	t := &tally{stderr: stderr, start: time.Now()}
	var s sender
	var err error
	if f.stream != "" {
		s, err = newKinesisSender(ctx, f, t)
	} else {
		s, err = newHTTPSender(ctx, f, t)
	}
	if err != nil {
		return err
	}
	if f.progress || isTerminal(stderr) {
		stopProgress := t.progress(isTerminal(stderr))
		defer stopProgress()
	}
	readErr := readInputs(ctx, f.files, func(ev inputEvent) error { return s.add(ctx, ev) }, t)
	if ctx.Err() != nil {
		stop() // a second Ctrl-C ends the process
	}
	// Whatever was read is sent, or reported failed, even after Ctrl-C.
	closeCtx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	closeErr := s.close(closeCtx)
	t.stopLine()
	t.summary(stdout, s.target(), s.words().outcomeWords)
	switch {
	case ctx.Err() != nil:
		return fmt.Errorf("interrupted after reading %s; the summary says what became of them", plural.Count(int(t.read.Load()), "event", "events"))
	case readErr != nil:
		return fmt.Errorf("%w; the events before it were sent (see the summary)", readErr)
	case closeErr != nil:
		return closeErr
	}
	if n := t.rejected.Load() + t.failed.Load(); n > 0 {
		return fmt.Errorf("%d %s not %s (see the lines above): %s; failed ones may be sent again, and an event with its own id and time is stored once however often it is sent",
			n, plural.Of(int(n), "event was", "events were"), s.words().verb, s.words().afterRejected)
	}
	return nil
}

// sender sends events: to a stream or to the API.
type sender interface {
	add(ctx context.Context, ev inputEvent) error // may block while busy
	close(ctx context.Context) error              // sends what is held
	target() string
	words() senderWords
}

// senderWords say what became of events, truly for a sender's target.
type senderWords struct {
	outcomeWords
	verb          string // what the target did with a sent event: "stored", "put on the stream"
	afterRejected string // what became of the rejected ones
}
