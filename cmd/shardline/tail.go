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
	"slices"
	"strconv"
	"time"

	"github.com/shardline/shardline/internal/backoff"
)

// tailHelp is what "shardline tail -h" prints before the flags.
const tailHelp = `usage: shardline tail -source S [-n N] [-f] [-interval D] [-late D] [flags]

Prints the newest -n events of a source, oldest first, one line of JSON
each (NDJSON); with -f it then follows the source like tail -f, asking
GET /v1/events every -interval for what is new, until Ctrl-C.

Each poll asks for every event from -late before the previous poll began,
and prints those it has not printed yet, by (time, id): nothing twice, and
no gap, including events that arrive late — with a time older than events
already printed (a producer's retry, a Kinesis batch redelivered, a time
set by the producer) — as long as they are stored within -late of their
time. An event stored later than that is not shown (shardline query finds
it). A late event prints when it is found, so it may come after newer ones.
A larger -late reads more each poll: a busy source's -late of events, every
-interval. Clocks count: -late also covers this machine's clock running
ahead of the API's. -consistent reads the base table (read-your-writes, more
read capacity); the GSI, the default, may trail a write by a moment, which
-late covers too.

` + apiHelp + `
examples:
  shardline tail -f -source orders
  shardline tail -f -source orders -type order.placed -interval 5s | jq -c .data
  shardline tail -n 50 -source orders                    the newest 50, then exit

flags:
`

// tailFlags are the flags of "shardline tail".
type tailFlags struct {
	fs                          *flag.FlagSet
	api                         apiFlags
	source, typ, subject, since string
	n                           int
	follow, consistent          bool
	interval, late              time.Duration
}

func newTailFlags(stderr io.Writer) *tailFlags {
	f := &tailFlags{fs: commandFlags("tail", tailHelp, stderr)}
	fs := f.fs
	f.api.register(fs)
	fs.StringVar(&f.source, "source", "", "the events' source (required)")
	fs.StringVar(&f.typ, "type", "", "only events of this type")
	fs.StringVar(&f.subject, "subject", "", "only events of this subject")
	fs.IntVar(&f.n, "n", 10, "print the newest N events first, 0-1000")
	fs.StringVar(&f.since, "since", "24h", "how far back the newest -n are looked for: a duration, at most 744h (31 days)")
	fs.BoolVar(&f.follow, "f", false, "follow: keep printing new events until Ctrl-C")
	fs.DurationVar(&f.interval, "interval", 2*time.Second, "pause between polls with -f")
	fs.DurationVar(&f.late, "late", time.Minute, "with -f, how long after its time an event may be stored and still be printed")
	fs.BoolVar(&f.consistent, "consistent", false, "strongly consistent reads of the base table")
	return f
}

func (f *tailFlags) parse(args []string) error {
	if err := parseFlagsOnly(f.fs, args); err != nil {
		return err
	}
	if f.source == "" {
		return errors.New("-source is required: the source whose events to print")
	}
	if f.n < 0 || f.n > 1000 {
		return fmt.Errorf("-n %d: must be 0-1000", f.n)
	}
	if d, err := time.ParseDuration(f.since); err != nil || d <= 0 || d > maxRange {
		return fmt.Errorf("-since %q: want a duration up to 744h (31 days), such as 24h", f.since)
	}
	if f.interval <= 0 || f.late < 0 || f.late > 24*time.Hour {
		return fmt.Errorf("-interval must be positive and -late between 0 and 24h")
	}
	return nil
}

// tailCmd is "shardline tail".
func tailCmd(args []string, stdout, stderr io.Writer) error {
	f := newTailFlags(stderr)
	if err := f.parse(args); err != nil {
		return err
	}
	ctx, stop := interruptible()
	defer stop()
	c, err := f.api.client(ctx)
	if err != nil {
		return err
	}
	return runTail(ctx, c, f, stdout)
}

// eventKey is what identifies an event of a source in the API's order:
// its time (Unix nanoseconds), then its id.
type eventKey struct {
	at int64
	id string
}

// tailEvent is an event as the API gave it, with its key.
type tailEvent struct {
	key eventKey
	raw json.RawMessage
}

// future is how far past now a poll's range reaches: the API takes events
// up to 5 minutes in the future.
const future = 6 * time.Minute

// maxRange is the longest range GET /v1/events answers, and the largest
// -since.
const maxRange = 31 * 24 * time.Hour

// tailer prints the events it has not printed yet.
type tailer struct {
	c    *apiClient
	f    *tailFlags
	out  *bufio.Writer
	seen map[eventKey]bool // printed (or there before -f began), time from the last poll's start - late
	now  func() time.Time
}

// runTail prints the newest events, then with -f follows until ctx ends.
func runTail(ctx context.Context, c *apiClient, f *tailFlags, stdout io.Writer) error {
	t := &tailer{c: c, f: f, out: bufio.NewWriter(stdout), seen: map[eventKey]bool{}, now: time.Now}
	defer t.out.Flush()
	start := t.now()
	if f.follow {
		// What is there already is not new: mark the -late window seen
		// first, so that an event stored while the newest are read is
		// printed once, by them or by the first poll.
		evs, err := t.list(ctx, start.Add(-f.late), start.Add(future))
		if err != nil {
			return err
		}
		for _, e := range evs {
			t.seen[e.key] = true
		}
	}
	if err := t.newest(ctx, start); err != nil {
		return err
	}
	if !f.follow {
		return nil
	}
	for prev := start; ; {
		if backoff.Sleep(ctx, f.interval) != nil {
			return nil // interrupted: tail -f ends there
		}
		pollStart := t.now()
		evs, err := t.list(ctx, prev.Add(-f.late), pollStart.Add(future))
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			return fmt.Errorf("follow %s: %w", f.source, err)
		}
		for _, e := range evs {
			if !t.seen[e.key] {
				t.seen[e.key] = true
				t.print(e)
			}
		}
		if err := t.out.Flush(); err != nil {
			return fmt.Errorf("write events: %w", err)
		}
		// The next poll starts from pollStart - late: keys older cannot come again.
		for k := range t.seen {
			if k.at < pollStart.Add(-f.late).UnixNano() {
				delete(t.seen, k)
			}
		}
		prev = pollStart
	}
}

// newest prints the newest -n events, oldest first.
func (t *tailer) newest(ctx context.Context, now time.Time) error {
	if t.f.n == 0 {
		return nil
	}
	since, _ := time.ParseDuration(t.f.since)
	// The range reaches future ahead too; within the API's 31 days, the
	// oldest minutes of a -since of 744h give way.
	to := now.Add(future)
	q := t.query(to.Add(-min(since+future, maxRange)), to)
	q.Set("order", "desc")
	q.Set("limit", strconv.Itoa(t.f.n))
	var page eventsPage
	if err := t.c.get(ctx, "/v1/events", q, &page); err != nil {
		return err
	}
	evs, err := keyed(page.Events)
	if err != nil {
		return err
	}
	slices.Reverse(evs)
	for _, e := range evs {
		t.seen[e.key] = true
		t.print(e)
	}
	return t.out.Flush()
}

func (t *tailer) print(e tailEvent) {
	t.out.Write(e.raw)
	t.out.WriteByte('\n')
}

func (t *tailer) query(from, to time.Time) url.Values {
	q := url.Values{"source": {t.f.source}, "from": {from.UTC().Format(time.RFC3339Nano)}, "to": {to.UTC().Format(time.RFC3339Nano)}}
	if t.f.typ != "" {
		q.Set("type", t.f.typ)
	}
	if t.f.subject != "" {
		q.Set("subject", t.f.subject)
	}
	if t.f.consistent {
		q.Set("consistent", "true")
	}
	return q
}

// list is every event in [from, to), oldest first, page after page.
func (t *tailer) list(ctx context.Context, from, to time.Time) ([]tailEvent, error) {
	q := t.query(from, to)
	q.Set("order", "asc")
	q.Set("limit", "1000")
	var out []tailEvent
	for {
		var page eventsPage
		if err := t.c.get(ctx, "/v1/events", q, &page); err != nil {
			return nil, err
		}
		evs, err := keyed(page.Events)
		if err != nil {
			return nil, err
		}
		out = append(out, evs...)
		if page.NextCursor == "" {
			return out, nil
		}
		q.Set("cursor", page.NextCursor)
	}
}

// keyed reads each event's time and id.
func keyed(raws []json.RawMessage) ([]tailEvent, error) {
	out := make([]tailEvent, 0, len(raws))
	for _, raw := range raws {
		var e struct {
			ID   string    `json:"id"`
			Time time.Time `json:"time"`
		}
		if err := json.Unmarshal(raw, &e); err != nil {
			return nil, fmt.Errorf("an event of the API's answer has no readable id and time: %w", err)
		}
		out = append(out, tailEvent{key: eventKey{at: e.Time.UnixNano(), id: e.ID}, raw: raw})
	}
	return out, nil
}
