package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/shardline/shardline/internal/counts"
	"github.com/shardline/shardline/ops/plural"
	"github.com/shardline/shardline/ops/sparkline"
)

// countsHelp is what "shardline counts -h" prints before the flags.
const countsHelp = `usage: shardline counts -source S [-from T] [-to T] [-interval I] [-type T] [-by-type=false] [flags]

Prints a chart of GET /v1/counts: for each type (or all together with
-by-type=false) its total and a sparkline, one bar per bucket, oldest on
the left, a blank for an empty bucket. When the range has more buckets
than -width, each bar sums several (the header says how many). Counts are
exact, each event once, in the bucket of its own time; they trail the
writes by about 10-15 seconds, at most a minute.

The range is the API's: by default the last 24 hours; -from and -to take
RFC 3339, epoch milliseconds, or a Go duration meaning that long ago (7d is
not one: write 168h). -interval is 1m, 5m, 15m, 1h or 1d, by default the
smallest giving at most 1,440 buckets.

` + apiHelp + `
examples:
  shardline counts -source orders                        the last 24 hours by minute
  shardline counts -source orders -from 168h -interval 1h
  shardline counts -source orders -type order.placed -from 2h -interval 1m

flags:
`

// countsFlags are the flags of "shardline counts".
type countsFlags struct {
	fs                              *flag.FlagSet
	api                             apiFlags
	source, from, to, interval, typ string
	byType                          bool
	width                           int
}

func newCountsFlags(stderr io.Writer) *countsFlags {
	f := &countsFlags{fs: commandFlags("counts", countsHelp, stderr)}
	fs := f.fs
	f.api.register(fs)
	fs.StringVar(&f.source, "source", "", "the events' source (required)")
	fs.StringVar(&f.from, "from", "", "start of the range: RFC 3339, epoch ms, or a duration ago (default: 24h before -to)")
	fs.StringVar(&f.to, "to", "", "end of the range: RFC 3339, epoch ms, or a duration ago (default: now)")
	fs.StringVar(&f.interval, "interval", "", "bucket: 1m, 5m, 15m, 1h or 1d (default: the smallest with at most 1,440 buckets)")
	fs.StringVar(&f.typ, "type", "", "count only this type")
	fs.BoolVar(&f.byType, "by-type", true, "a line per type (group_by=type); false: one line for all")
	fs.IntVar(&f.width, "width", 96, "most bars a line holds; more buckets are summed into fewer bars")
	return f
}

func (f *countsFlags) parse(args []string) error {
	if err := parseFlagsOnly(f.fs, args); err != nil {
		return err
	}
	if f.source == "" {
		return errors.New("-source is required: the source whose events to count")
	}
	if f.width < 1 {
		return fmt.Errorf("-width %d: must be positive", f.width)
	}
	return nil
}

// countsCmd is "shardline counts".
func countsCmd(args []string, stdout, stderr io.Writer) error {
	f := newCountsFlags(stderr)
	if err := f.parse(args); err != nil {
		return err
	}
	ctx, stop := interruptible()
	defer stop()
	c, err := f.api.client(ctx)
	if err != nil {
		return err
	}
	now := time.Now()
	q := url.Values{"source": {f.source}}
	for k, v := range map[string]string{"from": timeFlag(f.from, now), "to": timeFlag(f.to, now), "interval": f.interval, "type": f.typ} {
		if v != "" {
			q.Set(k, v)
		}
	}
	if f.byType {
		q.Set("group_by", "type")
	}
	var resp counts.Response
	if err := c.get(ctx, "/v1/counts", q, &resp); err != nil {
		return err
	}
	printCounts(stdout, f, resp)
	return nil
}

// printCounts draws resp: a header, a line per series, and the range's
// ends under the bars.
func printCounts(w io.Writer, f *countsFlags, resp counts.Response) {
	buckets := 0
	if len(resp.Series) > 0 {
		buckets = len(resp.Series[0].Points)
	}
	_, per := sparkline.Fit(make([]int, buckets), f.width)
	bar := resp.Interval
	if per > 1 {
		bar = fmt.Sprintf("%d × %s", per, resp.Interval)
	}
	what := f.source
	if f.typ != "" {
		what += ", type " + f.typ
	}
	fmt.Fprintf(w, "counts of %s from %s to %s: %d buckets of %s, one bar = %s\n", what, resp.From, resp.To, buckets, resp.Interval, bar)
	if len(resp.Series) == 0 {
		fmt.Fprintln(w, "no events in the range (counts trail the writes by up to a minute)")
		return
	}
	type line struct {
		name, total, peak, bars string
	}
	var lines []line
	nameW, totalW, peakW, barsW := 0, 0, 0, 0
	all := int64(0)
	for _, s := range resp.Series {
		n := make([]int, len(s.Points))
		sum, peak := int64(0), int64(0)
		for i, p := range s.Points {
			n[i] = int(p.Count)
			sum += p.Count
			peak = max(peak, p.Count)
		}
		all += sum
		l := line{name: s.Label(), total: fmt.Sprint(sum), peak: fmt.Sprintf("peak %d", peak)}
		bars, _ := sparkline.Fit(n, f.width)
		l.bars = sparkline.Draw(bars)
		nameW = max(nameW, utf8.RuneCountInString(l.name))
		totalW, peakW = max(totalW, len(l.total)), max(peakW, len(l.peak))
		barsW = max(barsW, len(bars))
		lines = append(lines, l)
	}
	for _, l := range lines {
		fmt.Fprintf(w, "  %s  %*s  %-*s  |%s|\n", padRight(l.name, nameW), totalW, l.total, peakW, l.peak, l.bars)
	}
	// The range's ends, under the first and the last bar.
	indent := strings.Repeat(" ", 2+nameW+2+totalW+2+peakW+2)
	from, to := resp.From, resp.To
	if gap := barsW + 2 - len(from) - len(to); gap >= 1 {
		fmt.Fprintf(w, "%s%s%s%s\n", indent, from, strings.Repeat(" ", gap), to)
	}
	if len(lines) > 1 {
		fmt.Fprintf(w, "%s in all\n", plural.Count(int(all), "event", "events"))
	}
}

// padRight pads s with spaces to n characters.
func padRight(s string, n int) string {
	return s + strings.Repeat(" ", max(n-utf8.RuneCountInString(s), 0))
}
