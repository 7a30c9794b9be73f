package benchrun

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/shardline/shardline/internal/ddbclient"
	"github.com/shardline/shardline/internal/ingest"
	"github.com/shardline/shardline/internal/item"
	"github.com/shardline/shardline/internal/query"
	"github.com/shardline/shardline/internal/schema"
	"github.com/shardline/shardline/internal/shardmap"
	"github.com/shardline/shardline/local/ddblocal"
	"github.com/shardline/shardline/pkg/bucketing"
)

// What the GSI copy costs and saves (issue 29 part 3), at the cost model's
// three workloads: a source of each workload's shape is written over two
// UTC days through the ingest handler, and a dashboard's pages are read
// back through the query handler on each path. A page's price does not
// depend on how many events a day holds once each of its keys holds more
// than the page asks of it, so the sources are written at a few hundred
// events an hour; what they keep of their workload is its shard counts and
// the size of each hour's first batch, which the hour index keeps as the
// hour's hint (shardmap.Hours.Mark) and the next day's first step
// follows (shardmap.Day.Quiet).

// copyShape is one workload's source, as the GSI copy sees it.
type copyShape struct {
	workload string
	source   string
	perHour  int // events written an hour
	// firstBatch is how many of an hour's events its first invocation
	// holds: what one container's first 1 s batch of the hour holds at
	// the workload's rate (1,000 events/s over 4 containers: 250; 0.1
	// events/s: 1). It is the hint the hour's mark carries.
	firstBatch     int
	shards, gshard int // the counts a steady-state day of the workload has (0: the configuration's)
}

// copyShapes are the cost model's workloads (DefaultCostWorkloads). The
// steady source's 1,000 events/s (about 1,000 WCU/s of copies) need a
// second GSI key at 70 % of the ceiling: adaptive sharding raises it on
// its first day, and every day after starts there (Config.Carry). The hot
// source runs on 32/32 as the cost model sets it. The many sources keep
// the configuration's 4/1; each of their days follows a quiet one.
var copyShapes = []copyShape{
	{workload: "steady", source: "plant/line-1", perHour: 600, firstBatch: 250, shards: 4, gshard: 2},
	{workload: "many", source: "device/0", perHour: 360, firstBatch: 1},
	{workload: "hot", source: "fleet/hot", perHour: 960, firstBatch: 250, shards: 32, gshard: 32},
}

// CopyRow is what one page cost on one path, with what the day's events
// cost to write, under one GSI_COPIES setting.
type CopyRow struct {
	Workload string `json:"workload"`
	Setting  string `json:"gsi_copies"`
	Counts   string `json:"counts"` // today's first step: "4/1", "4/1 day bucket", "1, no copy"
	// CopyWRU is the GSI copies' write units per event written today.
	CopyWRU  float64 `json:"copy_wru_per_event"`
	Query    string  `json:"query"`
	Asked    string  `json:"asked"` // "by cost", "gsi" or "scatter"
	Path     string  `json:"path"`
	Events   int     `json:"events"`
	Requests int     `json:"requests"`
	RCU      float64 `json:"consumed_rcu"`
	Reason   string  `json:"reason"`
}

// copySettings are the settings measured.
var copySettings = []shardmap.Copies{shardmap.CopiesAlways, shardmap.CopiesWhereItPays}

// measureCopies writes each shape's two days under each setting into a
// table of its own on client, and prices the pages.
func measureCopies(ctx context.Context, out io.Writer, client *dynamodb.Client, now time.Time) ([]CopyRow, error) {
	var rows []CopyRow
	for i, setting := range copySettings {
		table := fmt.Sprintf("bench-copies-%d-%d", i, now.UnixNano())
		if err := schema.Create(ctx, client, table); err != nil {
			return nil, err
		}
		for _, sh := range copyShapes {
			fmt.Fprintf(out, "copies: %s, GSI_COPIES=%s: writing two days ...\n", sh.workload, setting)
			cfg := ingest.DefaultConfig(table)
			cfg.GSICopies = setting
			if sh.shards > 0 {
				cfg.Shards.Overrides = map[string]int{sh.source: sh.shards}
				cfg.GSIShards.Overrides = map[string]int{sh.source: sh.gshard}
			}
			if err := loadShape(ctx, client, cfg, sh, now); err != nil {
				return nil, err
			}
			wru, err := copyUnits(ctx, client, table, sh.source, bucketing.Day(now))
			if err != nil {
				return nil, err
			}
			d, _, err := shardmap.ReadDay(ctx, client, table, bucketing.Stream{Space: bucketing.Events, Source: sh.source}, bucketing.Day(now))
			if err != nil {
				return nil, err
			}
			for _, w := range []struct {
				name string
				span time.Duration
			}{{"newest 100 of 1 h", time.Hour}, {"newest 100 of 24 h", 24 * time.Hour}} {
				for _, asked := range []string{"by cost", query.PathGSI, query.PathScatter} {
					o := query.Options{Now: func() time.Time { return now }}
					if asked != "by cost" {
						o.Path = asked
					}
					h := query.New(query.Config{Table: table}, client, o)
					q := url.Values{"source": {sh.source}, "limit": {"100"},
						"from": {now.Add(-w.span).Format(time.RFC3339)}, "to": {now.Format(time.RFC3339)}}
					req := events.APIGatewayV2HTTPRequest{Version: "2.0", RawPath: query.EventsRoute, RawQueryString: q.Encode()}
					req.RequestContext.HTTP.Method = "GET"
					var last query.EventsResponse
					if _, err := timedGet(ctx, h, req, 2, &last); err != nil {
						return nil, err
					}
					rows = append(rows, CopyRow{Workload: sh.workload, Setting: string(setting), Counts: countsOf(d), CopyWRU: wru,
						Query: w.name, Asked: asked, Path: last.Plan.Path, Events: len(last.Events),
						Requests: last.Plan.Requests, RCU: last.Plan.ConsumedRCU, Reason: last.Plan.Reason})
				}
			}
		}
	}
	return rows, nil
}

// countsOf describes a day's first step.
func countsOf(d shardmap.Day) string {
	if d.Sched == nil {
		return "none"
	}
	st := d.Sched[0]
	s := fmt.Sprintf("%d/%d", st.Shards, st.GSIShards)
	if st.DayBucket {
		s += " day bucket"
	}
	if st.NoGSICopy {
		s = fmt.Sprintf("%d, no copy", st.Shards)
	}
	return s
}

// loadShape writes sh's events from the start of the day before now's up
// to now, through an ingest handler of cfg: an invocation for each hour's
// first sh.firstBatch events at the hour's start, and one for the rest at
// its end, as the hour's first batch marks the hour and the others find
// it marked.
func loadShape(ctx context.Context, client *dynamodb.Client, cfg ingest.Config, sh copyShape, now time.Time) error {
	clock := now
	h := ingest.New(cfg, client, ingest.Options{Now: func() time.Time { return clock }})
	start := now.Truncate(24*time.Hour).AddDate(0, 0, -1)
	n := 0
	for hour := start; hour.Before(now); hour = hour.Add(time.Hour) {
		var first, rest []json.RawMessage
		var firstEnd time.Time // when the first batch's last event happened
		for i := range sh.perHour {
			at := hour.Add(time.Duration(i) * time.Hour / time.Duration(sh.perHour))
			if !at.Before(now) {
				break
			}
			b, _ := json.Marshal(map[string]any{"id": fmt.Sprintf("%s-%d", sh.source, n), "source": sh.source, "type": "reading",
				"time": at.Format(time.RFC3339Nano), "data": map[string]any{"i": n, "v": 0.5, "unit": "kPa", "site": "plant-7"}})
			n++
			if i < sh.firstBatch {
				first, firstEnd = append(first, b), at
			} else {
				rest = append(rest, b)
			}
		}
		for j, batch := range [][]json.RawMessage{first, rest} {
			if len(batch) == 0 {
				continue
			}
			clock = firstEnd.Add(time.Second)
			if j == 1 {
				clock = minTime(hour.Add(time.Hour), now)
			}
			if err := deliverEvents(ctx, h, batch); err != nil {
				return fmt.Errorf("copies: load %s: %w", sh.source, err)
			}
		}
	}
	return nil
}

// deliverEvents sends events to h as Kinesis records of 50 events at most, as
// Lambda does: again from the first record reported, a few times.
func deliverEvents(ctx context.Context, h *ingest.Handler, evs []json.RawMessage) error {
	var ev events.KinesisEvent
	for i := 0; i < len(evs); i += 50 {
		data, _ := json.Marshal(evs[i:min(i+50, len(evs))])
		ev.Records = append(ev.Records, events.KinesisEventRecord{EventSource: "aws:kinesis",
			Kinesis: events.KinesisRecord{Data: data, SequenceNumber: fmt.Sprint(len(ev.Records))}})
	}
	for attempt := 1; ; attempt++ {
		resp, err := h.Kinesis(ctx, ev)
		if err != nil {
			return err
		}
		if len(resp.BatchItemFailures) == 0 {
			return nil
		}
		if attempt == 5 {
			return fmt.Errorf("%d records still failed after %d deliveries", len(resp.BatchItemFailures), attempt)
		}
		first := len(ev.Records)
		for _, f := range resp.BatchItemFailures {
			for i, r := range ev.Records {
				if r.Kinesis.SequenceNumber == f.ItemIdentifier {
					first = min(first, i)
				}
			}
		}
		ev.Records = ev.Records[first:]
	}
}

// copyUnits is the write units of the GSI copies of source's events on
// day, per event: each item that has the GSI's key is copied, at a write
// unit per KB of what the GSI projects (Full), at least one.
func copyUnits(ctx context.Context, client *dynamodb.Client, table, source, day string) (float64, error) {
	var n, wru int
	err := ddblocal.Scan(ctx, client, &dynamodb.ScanInput{TableName: aws.String(table)}, func(out *dynamodb.ScanOutput) error {
		for _, it := range out.Items {
			k, err := bucketing.ParsePK(schema.S(it[schema.PK]))
			if err != nil || k.Space != bucketing.Events || k.Source != source || k.Day != day {
				continue
			}
			n++
			if _, ok := it[schema.GSIPK]; ok {
				wru += item.WriteUnits(gsiBytes(it))
			}
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("copies: scan %s: %w", table, err)
	}
	return float64(wru) / float64(max(1, n)), nil
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// copiesNow is when the copies' pages are read: noon of the day before
// wall's (so that the second day has twelve hours before it).
func copiesNow(wall time.Time) time.Time {
	return wall.UTC().Truncate(24 * time.Hour).Add(-12 * time.Hour)
}

// copiesMarkdown renders the rows.
func copiesMarkdown(b *strings.Builder, rows []CopyRow) {
	b.WriteString("\n## The GSI copy: what it costs and saves\n\n| workload | GSI_COPIES | today's counts | copy WRU / event | query | asked | path | events | requests | RCU |\n|---|---|---|---:|---|---|---|---:|---:|---:|\n")
	for _, x := range rows {
		fmt.Fprintf(b, "| %s | %s | %s | %.2f | %s | %s | %s | %d | %d | %.1f |\n",
			x.Workload, x.Setting, x.Counts, x.CopyWRU, x.Query, x.Asked, x.Path, x.Events, x.Requests, x.RCU)
	}
	b.WriteString("\nEach workload's source written over two UTC days through the ingest handler (an hour's first batch as the workload's rate makes it, the rest at the hour's end), read at noon of the second through the query handler, in a warm container (the days' shard records and hour indexes in its cache, as a dashboard's refresh finds them). docs/cost.md says what it means.\n")
}

// RunCopies measures the GSI copy alone (shardline-bench -copies-only)
// and prints its table.
func RunCopies(ctx context.Context, o Options) ([]CopyRow, error) {
	fmt.Fprintln(o.Out, "starting DynamoDB Local ...")
	local, err := ddblocal.Start(ctx, ddblocal.Options{})
	if err != nil {
		return nil, err
	}
	defer local.Close()
	rows, err := measureCopies(ctx, o.Out, ddbclient.Static(local.Endpoint, 64), copiesNow(time.Now()))
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	copiesMarkdown(&b, rows)
	fmt.Fprint(o.Out, b.String())
	return rows, nil
}
