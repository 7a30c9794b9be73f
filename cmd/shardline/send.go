package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/signal"
	"sort"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"

	"github.com/shardline/shardline/pkg/producer"
)

// sendHelp is what "shardline send -h" prints before the flags.
const sendHelp = `usage: shardline send (-stream NAME | -api URL) [-aggregate] [-progress] [FILE ...]

Reads events (CloudEvents in JSON) from the files, or from stdin when there
are none or for "-", and sends them to a Kinesis stream (-stream, with
pkg/producer's Kinesis producer: PutRecords batches, retries of the failed
records only, optional KPL aggregation) or to the HTTP API (POST /v1/events
in batches of up to 1,000 events or 6 MB, 503 and 429 retried). An input
is NDJSON (one event, or an array of events, a line), a JSON array of
events, or one event; pretty-printed JSON is fine.

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
ingest function, not refused here (GET /v1/quarantine lists it). Kinesis is
reached with the AWS SDK's default configuration (AWS_PROFILE, AWS_REGION,
AWS_ENDPOINT_URL_KINESIS, ...), or -endpoint; make run's kinesalite is at
http://127.0.0.1:4567 and needs no credentials.

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
	f := &sendFlags{fs: flag.NewFlagSet("shardline send", flag.ContinueOnError)}
	fs := f.fs
	fs.SetOutput(stderr)
	f.api.register(fs)
	fs.StringVar(&f.stream, "stream", "", "send to this Kinesis stream (a name or an ARN) instead of the API")
	fs.StringVar(&f.endpoint, "endpoint", "", "the Kinesis endpoint, such as make run's http://127.0.0.1:4567 (default: the SDK's)")
	fs.BoolVar(&f.aggregate, "aggregate", false, "with -stream, pack events into KPL aggregated records")
	fs.BoolVar(&f.progress, "progress", false, "print a progress line every second even when stderr is not a terminal")
	fs.Usage = func() {
		fmt.Fprint(stderr, sendHelp)
		fs.PrintDefaults()
	}
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
	}
	return nil
}

// sendCmd is "shardline send".
func sendCmd(args []string, stdout, stderr io.Writer) error {
	f := newSendFlags(stderr)
	if err := f.parse(args); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
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
	t.summary(stdout, s.target())
	switch {
	case ctx.Err() != nil:
		return fmt.Errorf("interrupted after reading %d events; the summary says what became of them", t.read.Load())
	case readErr != nil:
		return fmt.Errorf("%w; the events before it were sent (see the summary)", readErr)
	case closeErr != nil:
		return closeErr
	}
	if n := t.rejected.Load() + t.failed.Load(); n > 0 {
		return fmt.Errorf("%d %s not stored (see the lines above): the API quarantines those it rejected; failed ones may be sent again, and an event with its own id and time is stored once however often it is sent",
			n, plural(int(n), "event was", "events were"))
	}
	return nil
}

// inputEvent is an event read, stamped, with where it came from.
type inputEvent struct {
	id   string
	data []byte
	at   string // file:line
}

// readInputs reads each file in turn (stdin for "-") and hands add each
// event. A syntax error or a value that is not an event stops it, named by
// file:line; an event producer.Stamp refuses is counted rejected.
func readInputs(ctx context.Context, files []string, add func(inputEvent) error, t *tally) error {
	for _, name := range files {
		var r io.Reader
		display := name
		if name == "-" {
			r, display = stdin, "stdin"
		} else {
			fh, err := os.Open(name)
			if err != nil {
				return fmt.Errorf("open input: %w", err)
			}
			defer fh.Close()
			r = fh
		}
		if err := readInput(ctx, display, r, add, t); err != nil {
			return err
		}
	}
	return nil
}

// readInput reads one input: a stream of JSON values, each an event or an
// array of events. A first value that is an array is read element by
// element, so a large JSON array file is never held whole.
func readInput(ctx context.Context, name string, r io.Reader, add func(inputEvent) error, t *tally) error {
	lr := &lineReader{r: r}
	br := bufio.NewReaderSize(lr, 64<<10)
	dec := json.NewDecoder(br)
	where := func(off int64) string { return fmt.Sprintf("%s:%d", name, lr.line(off)) }
	fail := func(err error, last int64) error {
		var syn *json.SyntaxError
		var typ *json.UnmarshalTypeError
		switch {
		case errors.As(err, &syn):
			return fmt.Errorf("%s: not JSON: %w", where(syn.Offset), err)
		case errors.As(err, &typ):
			return fmt.Errorf("%s: %w", where(typ.Offset), err)
		case errors.Is(err, io.ErrUnexpectedEOF):
			return fmt.Errorf("%s: the input ends inside the JSON value that begins here", where(lr.next(last)))
		}
		return fmt.Errorf("%s: read: %w", where(last), err)
	}
	emit := func(raw json.RawMessage, at string) error {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if len(raw) == 0 || raw[0] != '{' {
			return fmt.Errorf("%s: %s, not an event (a JSON object) or an array of events", at, kindOf(raw))
		}
		t.read.Add(1)
		id, data, err := producer.Stamp(raw, time.Now())
		if err != nil {
			t.reject(at, id, err.Error())
			return nil
		}
		return add(inputEvent{id: id, data: data, at: at})
	}
	if first, err := peekNonSpace(br); err == nil && first == '[' {
		if _, err := dec.Token(); err != nil {
			return fail(err, 0)
		}
		for i := 0; dec.More(); i++ {
			var raw json.RawMessage
			before := dec.InputOffset()
			if err := dec.Decode(&raw); err != nil {
				return fail(err, before)
			}
			end := dec.InputOffset()
			if err := emit(raw, where(end-int64(len(raw)))); err != nil {
				return err
			}
			lr.forget(end)
		}
		if _, err := dec.Token(); err != nil {
			return fail(err, dec.InputOffset())
		}
	}
	for {
		var raw json.RawMessage
		before := dec.InputOffset()
		err := dec.Decode(&raw)
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fail(err, before)
		}
		end := dec.InputOffset()
		at := where(end - int64(len(raw)))
		if raw[0] == '[' {
			var elems []json.RawMessage
			if err := json.Unmarshal(raw, &elems); err != nil {
				return fmt.Errorf("%s: %w", at, err)
			}
			for i, e := range elems {
				if err := emit(e, fmt.Sprintf("%s[%d]", at, i)); err != nil {
					return err
				}
			}
		} else if err := emit(raw, at); err != nil {
			return err
		}
		lr.forget(end)
	}
}

func kindOf(raw json.RawMessage) string {
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '[':
		return "an array inside an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

// peekNonSpace is the first byte of br that is not JSON whitespace, left
// unread; 0 when the buffer holds nothing else.
func peekNonSpace(br *bufio.Reader) (byte, error) {
	for i := 1; i <= br.Size(); i++ {
		b, err := br.Peek(i)
		if err != nil {
			return 0, err
		}
		switch c := b[i-1]; c {
		case ' ', '\t', '\r', '\n':
		default:
			return c, nil
		}
	}
	return 0, nil
}

// lineReader counts the lines of what is read through it, keeping the
// offsets of the newlines not yet forgotten.
type lineReader struct {
	r       io.Reader
	read    int64   // bytes read
	nl      []int64 // offsets of the newlines since the last forget
	dropped int     // newlines forgotten
}

func (l *lineReader) Read(p []byte) (int, error) {
	n, err := l.r.Read(p)
	for i, c := range p[:n] {
		if c == '\n' {
			l.nl = append(l.nl, l.read+int64(i))
		}
	}
	l.read += int64(n)
	return n, err
}

// line is the line (from 1) of the byte at offset off.
func (l *lineReader) line(off int64) int {
	return l.dropped + sort.Search(len(l.nl), func(i int) bool { return l.nl[i] >= off }) + 1
}

// next is the offset of the line after off when off is a newline (where
// the next value of NDJSON begins), else off.
func (l *lineReader) next(off int64) int64 {
	i := sort.Search(len(l.nl), func(i int) bool { return l.nl[i] >= off })
	if i < len(l.nl) && l.nl[i] == off {
		return off + 1
	}
	return off
}

// forget drops the newlines before off: no line is asked of them again.
func (l *lineReader) forget(off int64) {
	i := sort.Search(len(l.nl), func(i int) bool { return l.nl[i] >= off })
	l.dropped += i
	l.nl = l.nl[i:]
}

// sender sends events: to a stream or to the API.
type sender interface {
	add(ctx context.Context, ev inputEvent) error // may block while busy
	close(ctx context.Context) error              // sends what is held
	target() string
}

// tally counts what became of the events and prints rejections and
// progress to stderr.
type tally struct {
	stderr                       io.Writer
	start                        time.Time
	mu                           sync.Mutex // guards stderr and line
	line                         bool       // a progress line is on the terminal
	read, sent, rejected, failed atomic.Int64
	stopOnce                     sync.Once
	stopTick                     chan struct{}
	tickDone                     chan struct{}
	terminal                     bool
}

func (t *tally) printf(format string, args ...any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.line {
		fmt.Fprint(t.stderr, "\r\033[K")
		t.line = false
	}
	fmt.Fprintf(t.stderr, format, args...)
}

func (t *tally) reject(at, id, reason string) {
	t.rejected.Add(1)
	t.printf("rejected %s%s: %s\n", at, idPart(id), reason)
}

func (t *tally) fail(at, id string, err error) {
	t.failed.Add(1)
	t.printf("failed   %s%s: %v\n", at, idPart(id), err)
}

func idPart(id string) string {
	if id == "" {
		return ""
	}
	return fmt.Sprintf(" (id %q)", id)
}

// progress prints a progress line every second until stopLine; on a
// terminal the line is rewritten in place.
func (t *tally) progress(terminal bool) func() {
	t.terminal = terminal
	t.stopTick, t.tickDone = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(t.tickDone)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-t.stopTick:
				return
			case <-tick.C:
				t.mu.Lock()
				s := t.status()
				if terminal {
					fmt.Fprintf(t.stderr, "\r\033[K%s", s)
					t.line = true
				} else {
					fmt.Fprintln(t.stderr, s)
				}
				t.mu.Unlock()
			}
		}
	}()
	return t.stopLine
}

// stopLine stops the progress line and clears it.
func (t *tally) stopLine() {
	if t.stopTick == nil {
		return
	}
	t.stopOnce.Do(func() {
		close(t.stopTick)
		<-t.tickDone
		t.mu.Lock()
		if t.line {
			fmt.Fprint(t.stderr, "\r\033[K")
			t.line = false
		}
		t.mu.Unlock()
	})
}

func (t *tally) status() string {
	secs := time.Since(t.start).Seconds()
	rate := 0.0
	if secs > 0 {
		rate = float64(t.sent.Load()) / secs
	}
	return fmt.Sprintf("read %d, sent %d, rejected %d, failed %d (%.0f events/s)", t.read.Load(), t.sent.Load(), t.rejected.Load(), t.failed.Load(), rate)
}

// summary prints what became of the events.
func (t *tally) summary(w io.Writer, target string) {
	d := time.Since(t.start).Round(time.Millisecond)
	fmt.Fprintf(w, "%d events read in %v, to %s:\n", t.read.Load(), d, target)
	fmt.Fprintf(w, "  sent      %d\n", t.sent.Load())
	fmt.Fprintf(w, "  rejected  %d\n", t.rejected.Load())
	fmt.Fprintf(w, "  failed    %d\n", t.failed.Load())
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// httpSender sends to POST /v1/events, a batch at a time.
type httpSender struct {
	base  string
	h     *producer.HTTP
	t     *tally
	batch []inputEvent
	bytes int
}

func newHTTPSender(ctx context.Context, f *sendFlags, t *tally) (*httpSender, error) {
	c, err := f.api.client(ctx)
	if err != nil {
		return nil, err
	}
	return &httpSender{base: c.base, h: c.producer(), t: t}, nil
}

func (s *httpSender) target() string { return "POST " + s.base + "/v1/events" }

func (s *httpSender) add(ctx context.Context, ev inputEvent) error {
	if len(s.batch) == producer.MaxRequestEvents || s.bytes+len(ev.data)+1 > producer.MaxRequestBytes-2 {
		if err := s.flush(ctx); err != nil {
			return err
		}
	}
	s.batch = append(s.batch, ev)
	s.bytes += len(ev.data) + 1
	return nil
}

func (s *httpSender) close(ctx context.Context) error { return s.flush(ctx) }

// flush sends the batch and tallies what became of each event.
func (s *httpSender) flush(ctx context.Context) error {
	if len(s.batch) == 0 {
		return nil
	}
	batch := s.batch
	s.batch, s.bytes = nil, 0
	evs := make([]any, len(batch))
	for i, e := range batch {
		evs[i] = json.RawMessage(e.data)
	}
	res, err := s.h.Send(ctx, evs...)
	s.t.sent.Add(int64(res.Accepted))
	for _, r := range res.Rejected {
		s.t.reject(batch[r.Index].at, r.ID, r.Error)
	}
	for _, r := range res.Failed {
		s.t.fail(batch[r.Index].at, r.ID, errors.New(r.Error))
	}
	if err != nil {
		var se *producer.StatusError
		if errors.As(err, &se) {
			return &apiError{method: "POST", route: "/v1/events", status: se.Status, message: errorMessage([]byte(se.Body))}
		}
		return fmt.Errorf("send to %s: %w", s.target(), err)
	}
	return nil
}

// kinesisSender puts events on a stream through a Kinesis producer.
type kinesisSender struct {
	stream string
	p      *producer.Kinesis
	t      *tally
	mu     sync.Mutex
	where  map[string][]string // id -> file:line of each event not yet reported
}

func newKinesisSender(ctx context.Context, f *sendFlags, t *tally) (*kinesisSender, error) {
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("load AWS configuration: %w", err)
	}
	var opts []func(*kinesis.Options)
	if f.endpoint != "" {
		u, err := url.Parse(f.endpoint)
		if err != nil || u.Host == "" {
			return nil, fmt.Errorf("-endpoint %q: want a URL such as http://127.0.0.1:4567", f.endpoint)
		}
		opts = append(opts, func(o *kinesis.Options) { o.BaseEndpoint = aws.String(f.endpoint) })
		if isLoopback(u.Hostname()) {
			// A local Kinesis (kinesalite) takes any credentials.
			if cfg.Region == "" {
				cfg.Region = "us-east-1"
			}
			if _, err := cfg.Credentials.Retrieve(ctx); err != nil || cfg.Credentials == nil {
				cfg.Credentials = credentials.NewStaticCredentialsProvider("local", "local", "")
			}
		}
	}
	if cfg.Region == "" {
		return nil, errors.New("the Kinesis stream's region is not set: set AWS_REGION (or a profile's region)")
	}
	s := &kinesisSender{stream: f.stream, t: t, where: map[string][]string{}}
	popts := []producer.KinesisOption{producer.WithOnResult(s.outcome)}
	if f.aggregate {
		popts = append(popts, producer.WithAggregation())
	}
	s.p = producer.NewKinesis(kinesis.NewFromConfig(cfg, opts...), f.stream, popts...)
	return s, nil
}

func (s *kinesisSender) target() string { return "Kinesis stream " + s.stream }

func (s *kinesisSender) add(ctx context.Context, ev inputEvent) error {
	s.mu.Lock()
	s.where[ev.id] = append(s.where[ev.id], ev.at)
	s.mu.Unlock()
	err := s.p.Put(ctx, json.RawMessage(ev.data))
	if err == nil {
		return nil
	}
	s.mu.Lock()
	s.pop(ev.id)
	s.mu.Unlock()
	if errors.Is(err, producer.ErrTooLarge) {
		s.t.reject(ev.at, ev.id, err.Error())
		return nil
	}
	return err
}

// pop is where the oldest unreported event of id came from; s.mu is held.
func (s *kinesisSender) pop(id string) string {
	at := s.where[id]
	if len(at) == 0 {
		return ""
	}
	if len(at) == 1 {
		delete(s.where, id)
	} else {
		s.where[id] = at[1:]
	}
	return at[0]
}

// outcome tallies what became of one event; the producer calls it.
func (s *kinesisSender) outcome(o producer.Outcome) {
	s.mu.Lock()
	at := s.pop(o.ID)
	s.mu.Unlock()
	if o.Err != nil {
		s.t.fail(at, o.ID, o.Err)
		return
	}
	s.t.sent.Add(1)
}

func (s *kinesisSender) close(ctx context.Context) error {
	if err := s.p.Close(ctx); err != nil {
		return fmt.Errorf("send to %s: %w", s.target(), err)
	}
	return nil
}
