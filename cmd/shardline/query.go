package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"time"

	"github.com/shardline/shardline/ops/plural"
)

// queryHelp is what "shardline query -h" prints before the flags.
const queryHelp = `usage: shardline query -source S [-from T] [-to T] [-type T] [-subject S] [-order asc|desc] [-consistent] [-max N] [flags]

Pages through GET /v1/events, following next_cursor, and writes each event
to stdout as one line of JSON (NDJSON), in the API's order: newest first by
default, -order asc for oldest first (by time, then id bytewise). Every
event of the range comes once. -max stops after N events and says on stderr
how to go on (-cursor). The range is the API's: -from inclusive, -to
exclusive, at most 31 days; by default the last hour. Each takes RFC 3339,
epoch milliseconds, or a Go duration meaning that long ago (15m, 36h).
-consistent reads the base table (read-your-writes); otherwise the GSI,
which may trail a write by a moment.

` + apiHelp + `
examples:
  shardline query -source orders                         the last hour, newest first
  shardline query -source orders -from 24h -order asc -type order.placed | jq .data
  shardline query -source orders -from 2026-11-21T00:00:00Z -to 2026-11-22T00:00:00Z -max 5000
  shardline query -source orders -api https://abc123.execute-api.eu-west-1.amazonaws.com

flags:
`

// queryFlags are the flags of "shardline query".
type queryFlags struct {
	fs                                            *flag.FlagSet
	api                                           apiFlags
	source, from, to, typ, subject, order, cursor string
	limit, max                                    int
	consistent, plan                              bool
}

func newQueryFlags(stderr io.Writer) *queryFlags {
	f := &queryFlags{fs: commandFlags("query", queryHelp, stderr)}
	fs := f.fs
	f.api.register(fs)
	fs.StringVar(&f.source, "source", "", "the events' source (required)")
	fs.StringVar(&f.from, "from", "", "start of the range, inclusive: RFC 3339, epoch ms, or a duration ago (default: 1h before -to)")
	fs.StringVar(&f.to, "to", "", "end of the range, exclusive: RFC 3339, epoch ms, or a duration ago (default: now)")
	fs.StringVar(&f.typ, "type", "", "only events of this type")
	fs.StringVar(&f.subject, "subject", "", "only events of this subject")
	fs.StringVar(&f.order, "order", "desc", "desc (newest first) or asc")
	fs.BoolVar(&f.consistent, "consistent", false, "strongly consistent reads of the base table (read-your-writes)")
	fs.IntVar(&f.limit, "limit", 0, "events per page, 1-1000 (default: the API's, 100)")
	fs.IntVar(&f.max, "max", 0, "stop after this many events (0: all of the range)")
	fs.StringVar(&f.cursor, "cursor", "", "go on from this next_cursor (the same source, range, order and filters)")
	fs.BoolVar(&f.plan, "plan", false, "print each page's plan (path, requests, read capacity) to stderr")
	return f
}

func (f *queryFlags) parse(args []string) error {
	if err := parseFlagsOnly(f.fs, args); err != nil {
		return err
	}
	if f.source == "" {
		return fmt.Errorf("-source is required: the source whose events to read (shardline sources are listed by GET /v1/sources)")
	}
	if f.max < 0 || f.limit < 0 || f.limit > 1000 {
		return fmt.Errorf("-limit must be 1-1000 and -max 0 or more")
	}
	return nil
}

// eventsPage is the answer of GET /v1/events.
type eventsPage struct {
	Events     []json.RawMessage `json:"events"`
	NextCursor string            `json:"next_cursor"` // "" on the last page (absent from APIs before it was always sent)
	Plan       json.RawMessage   `json:"plan"`
}

// queryCmd is "shardline query".
func queryCmd(args []string, stdout, stderr io.Writer) error {
	f := newQueryFlags(stderr)
	if err := f.parse(args); err != nil {
		return err
	}
	ctx, stop := interruptible()
	defer stop()
	c, err := f.api.client(ctx)
	if err != nil {
		return err
	}
	return runQuery(ctx, c, f, stdout, stderr)
}

func runQuery(ctx context.Context, c *apiClient, f *queryFlags, stdout, stderr io.Writer) error {
	now := time.Now()
	q := url.Values{"source": {f.source}, "order": {f.order}}
	from, to := timeFlag(f.from, now), timeFlag(f.to, now)
	if from != "" && to == "" {
		// The API's default to is its now, which moves between pages; a
		// cursor holds the range it was issued for.
		to = now.UTC().Format(time.RFC3339Nano)
	}
	for k, v := range map[string]string{"from": from, "to": to, "type": f.typ, "subject": f.subject} {
		if v != "" {
			q.Set(k, v)
		}
	}
	if f.consistent {
		q.Set("consistent", "true")
	}
	out := bufio.NewWriter(stdout)
	defer out.Flush()
	// goOn is how to take up the listing after the last page written: the
	// cursor with the range the pages had, absolute.
	goOn := func(cursor string) string {
		s := ""
		if from != "" {
			s += " -from " + from
		}
		if to != "" {
			s += " -to " + to
		}
		return s + fmt.Sprintf(" -cursor %q", cursor)
	}
	cursor, written, pages := f.cursor, 0, 0
	for {
		limit := f.limit
		if f.max > 0 {
			left := f.max - written
			if limit == 0 {
				limit = 100
			}
			limit = min(limit, left)
		}
		if limit > 0 {
			q.Set("limit", strconv.Itoa(limit))
		}
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		var page eventsPage
		if err := c.get(ctx, "/v1/events", q, &page); err != nil {
			if written > 0 {
				return fmt.Errorf("%w (after %s; add%s to go on from the last page written)", err, plural.Count(written, "event", "events"), goOn(cursor))
			}
			return err
		}
		pages++
		for _, ev := range page.Events {
			out.Write(ev)
			out.WriteByte('\n')
		}
		if err := out.Flush(); err != nil {
			return fmt.Errorf("write events: %w", err)
		}
		written += len(page.Events)
		if f.plan {
			fmt.Fprintf(stderr, "page %d: %s, plan %s\n", pages, plural.Count(len(page.Events), "event", "events"), page.Plan)
		}
		cursor = page.NextCursor
		if cursor == "" {
			return nil
		}
		if f.max > 0 && written >= f.max {
			fmt.Fprintf(stderr, "stopped after %s (-max); more remain: add%s to go on\n", plural.Count(written, "event", "events"), goOn(cursor))
			return nil
		}
	}
}
