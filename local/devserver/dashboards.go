package devserver

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/shardline/shardline/internal/catalog"
	"github.com/shardline/shardline/internal/counts"
	"github.com/shardline/shardline/internal/item"
	"github.com/shardline/shardline/internal/query"
	"github.com/shardline/shardline/local/ddbstreams"
	"github.com/shardline/shardline/ops/sparkline"
)

// LocalCounterWindow is the local counter's batching window: shorter than
// the stack's (counts.md), so that a chart catches up within a second.
const LocalCounterWindow = time.Second

// LocalFoldEvery is how often the local server folds the counter's links:
// the stack's schedule folds every counts.FoldEvery (20 s); locally a
// chart catches up within a second or two, as the counter's window does.
// The hour's roll-up runs as the stack's does, RollupAfter into the hour.
const LocalFoldEvery = time.Second

// startCounter runs the counter function on the table's stream, as the
// stack's event source mapping does: only inserted events, batched, with the
// shard id, retried a bounded number of times, then given up to the
// on-failure bucket. It stops with ctx.
func startCounter(ctx context.Context, out io.Writer, client *dynamodb.Client, endpoint, table string, retention time.Duration, fb failed, log *slog.Logger) error {
	arn, err := ddbstreams.StreamARN(ctx, client, table)
	if err != nil {
		return fmt.Errorf("counts: %w (a table made by an older shardline has none: use a fresh -db directory)", err)
	}
	f := counts.New(counts.Config{Table: table, Retention: retention}, client, counts.Options{Logger: log})
	p := &ddbstreams.Poller{
		Client:    ddbstreams.Static(endpoint),
		StreamARN: arn,
		Window:    LocalCounterWindow,
		BatchSize: 1000,
		Log:       log,
		Filter:    func(r events.DynamoDBEventRecord) bool { return item.IsEventChange(r, "INSERT") },
		Retry:     fb.retry(LocalCounterFunction, LocalCounterMapping),
		Handler: func(ctx context.Context, ev events.DynamoDBTimeWindowEvent) error {
			_, err := f.Invoke(ctx, ev)
			return err
		},
	}
	go p.Run(ctx)
	fmt.Fprintf(out, "counter function polling the table's stream (batching window %v; the stack's is %ds)\n", LocalCounterWindow, 10)
	lsm := &counts.LSM{Client: client, Table: table, Retention: retention}
	go foldEvery(ctx, lsm, LocalFoldEvery, log)
	fmt.Fprintf(out, "counters' fold every %v (the stack's every %v), their roll-up each hour\n", LocalFoldEvery, counts.FoldEvery)
	return nil
}

// foldEvery plays the stack's scheduled fold until ctx ends: a fold every
// d, and the hour's roll-up when it is due. A failure is logged; the next
// tick finishes what it left, as the next minute's invocation does.
func foldEvery(ctx context.Context, l *counts.LSM, d time.Duration, log *slog.Logger) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if _, err := l.Fold(ctx); err != nil && ctx.Err() == nil {
			log.Warn("fold", slog.String("error", err.Error()))
			continue
		}
		if _, _, err := l.RollupIfDue(ctx); err != nil && ctx.Err() == nil {
			log.Warn("roll-up", slog.String("error", err.Error()))
		}
	}
}

// dashboards prints what a dashboard shows of the samples: the sources of
// the last two days and, for each, an hourly chart by type, once the
// counter has counted all stored events (at most a few seconds).
func dashboards(ctx context.Context, out io.Writer, base string, stored int) error {
	from := time.Now().UTC().Add(-48 * time.Hour).Truncate(time.Hour)
	q := url.Values{"from": {from.Format(time.RFC3339)}}
	var src catalog.Response
	if err := getJSON(ctx, base+query.SourcesRoute+"?"+q.Encode(), &src); err != nil {
		return err
	}
	charts, total := map[string]counts.Response{}, 0
	for wait := time.Now(); ; {
		charts, total = map[string]counts.Response{}, 0
		for _, s := range src.Sources {
			cq := url.Values{"source": {s.Source}, "from": {fmt.Sprint(from.UnixMilli())}, "interval": {"1h"}, "group_by": {"type"}}
			var c counts.Response
			if err := getJSON(ctx, base+query.CountsRoute+"?"+cq.Encode(), &c); err != nil {
				return err
			}
			charts[s.Source] = c
			total += seriesTotal(c.Series)
		}
		if total >= stored || time.Since(wait) > 15*time.Second || ctx.Err() != nil {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	printDashboards(out, src, charts, total, stored)
	return nil
}

func printDashboards(out io.Writer, src catalog.Response, charts map[string]counts.Response, total, stored int) {
	fmt.Fprintf(out, "\nGET %s: %d sources in the last two days\n", query.SourcesRoute, len(src.Sources))
	fmt.Fprintf(out, "GET %s?interval=1h&group_by=type: %d of %d stored events counted, one bar an hour, oldest first\n", query.CountsRoute, total, stored)
	tw := tabwriter.NewWriter(out, 2, 4, 2, ' ', 0)
	for _, s := range src.Sources {
		c := charts[s.Source]
		fmt.Fprintf(tw, "  %s\t(%s)\t\t\n", s.Source, strings.Join(s.Days, ", "))
		for _, ser := range c.Series {
			n := make([]int, len(ser.Points))
			for i, p := range ser.Points {
				n[i] = int(p.Count)
			}
			fmt.Fprintf(tw, "    %s\t%d\t|%s|\n", ser.Label(), seriesTotal([]counts.Series{ser}), sparkline.Draw(n))
		}
	}
	tw.Flush()
}

func seriesTotal(ss []counts.Series) int {
	n := 0
	for _, s := range ss {
		for _, p := range s.Points {
			n += int(p.Count)
		}
	}
	return n
}

func getJSON(ctx context.Context, u string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("GET %s: %w", u, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("GET %s: %d %s", u, resp.StatusCode, b)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}
