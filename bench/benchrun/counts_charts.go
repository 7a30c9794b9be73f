package benchrun

import (
	"context"
	"fmt"
	"net/url"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/shardline/shardline/internal/counts"
	"github.com/shardline/shardline/internal/ingest"
	"github.com/shardline/shardline/internal/item"
	"github.com/shardline/shardline/internal/query"
	"github.com/shardline/shardline/internal/schema"
	"github.com/shardline/shardline/ops/sourcecounter"
	"github.com/shardline/shardline/pkg/bucketing"
)

// CountsChartRow prices one chart of GET /v1/counts.
type CountsChartRow struct {
	Kind        string  `json:"kind"` // chartDay or chartMonth
	Chart       string  `json:"chart"`
	Query       string  `json:"query"`
	Series      int     `json:"series"`
	Buckets     int     `json:"buckets"`
	Events      int64   `json:"events"`
	Items       int     `json:"counter_items"`
	ItemBytes   int     `json:"counter_item_bytes"`
	MaxItem     int     `json:"largest_item_bytes"`
	Requests    int     `json:"requests"`     // the answer's plan.requests
	RCU         float64 `json:"consumed_rcu"` // the answer's plan.consumed_rcu, as DynamoDB Local reported it
	PricedRCU   float64 `json:"priced_rcu"`   // DynamoDB's rule over the same pages' item sizes
	LatencyMs   float64 `json:"latency_ms"`
	queryParams url.Values
}

// The charts the issue prices.
const (
	chartDay   = "day"
	chartMonth = "month"
)

// segment is a stretch of the busy source's history: an event every step,
// of a random type, or of each type in turn when cycle is set.
type segment struct {
	from, to time.Time
	step     time.Duration
	cycle    bool
}

// events is how many of the segment's events fall in [from, to), which
// lie on multiples of step from the segment's start.
func (s segment) events(from, to time.Time) int64 {
	lo, hi := later(s.from, from), earlier(s.to, to)
	if !lo.Before(hi) {
		return 0
	}
	return int64(hi.Sub(lo) / s.step)
}

func earlier(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// measureCharts writes o.Days of the busy source's counter items through
// the real counter, and asks the real query handler for a day's chart at
// 1 minute and a month's at 1 hour, grouped by type, at end: a dashboard's
// "now" in mid-hour, so that a day's chart reads the items of 24 and a half
// hours. It also
// returns the month chart's requests had every hour run at o.Rate.
func measureCharts(ctx context.Context, client *dynamodb.Client, o CountsOptions, end time.Time) ([]CountsChartRow, int, error) {
	if err := schema.Create(ctx, client, countsChartsTable); err != nil {
		return nil, 0, err
	}
	hour := end.Truncate(time.Hour)
	segs := []segment{
		{from: hour.Add(-time.Duration(o.Days) * 24 * time.Hour), to: hour.Add(-24 * time.Hour), step: time.Minute / time.Duration(o.Types), cycle: true},
		{from: hour.Add(-24 * time.Hour), to: end, step: time.Second / time.Duration(o.Rate)},
	}
	if err := loadCounters(ctx, client, o, segs); err != nil {
		return nil, 0, err
	}
	rows := []CountsChartRow{
		{Kind: chartDay, Chart: "24 h at 1 minute, by type", queryParams: url.Values{"source": {busySource}, "interval": {"1m"}, "group_by": {"type"}}},
		{Kind: chartMonth, Chart: fmt.Sprintf("%d d at 1 hour, by type", o.Days), queryParams: url.Values{"source": {busySource},
			"from": {end.Add(-time.Duration(o.Days) * 24 * time.Hour).Format(time.RFC3339)}, "to": {end.Format(time.RFC3339)}, "interval": {"1h"}, "group_by": {"type"}}},
	}
	h := query.New(query.Config{Table: countsChartsTable}, client, query.Options{Now: func() time.Time { return end }})
	for i := range rows {
		if err := chart(ctx, h, client, &rows[i], segs, end); err != nil {
			return nil, 0, fmt.Errorf("%s: %w", rows[i].Chart, err)
		}
		if rows[i].Series != o.Types {
			return nil, 0, fmt.Errorf("%s: %d series; %d types were sent", rows[i].Chart, rows[i].Series, o.Types)
		}
	}
	// A Query page holds up to 1 MB of items: the month's items at the
	// size of the day's largest, which ran at o.Rate all hour.
	atRate := rows[1].Items*rows[0].MaxItem/(1<<20) + 1
	return rows, atRate, nil
}

// loadCounters counts the segments' events into the counter items, the
// stream shards making their records at once. Only the items matter
// here, not how the mapping would cut the invocations, so each holds the
// most records one may (10,000), and stream shard k carries the k-th
// quarter of every counter item's ten minutes: each item gets a watermark
// per shard, and a quiet item takes one update per shard rather than
// three.
func loadCounters(ctx context.Context, client *dynamodb.Client, o CountsOptions, segs []segment) error {
	l := &loader{c: &sourcecounter.Counter{Client: client, Table: countsChartsTable, Retention: counts.DefaultRetentionDays * 24 * time.Hour},
		types: eventTypes(o.Types), segs: segs, shards: ingest.DefaultShards}
	errs := make(chan error, l.shards)
	for k := range l.shards {
		go func() { errs <- l.shard(ctx, k) }()
	}
	var first error
	for range l.shards {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}

// loader writes the charts' counter items.
type loader struct {
	c      *sourcecounter.Counter
	types  []string
	segs   []segment
	shards int
	// DynamoDB Local serialises a table's writes and times out a request
	// that waits too long for its lock (AWS does not): the shards apply
	// their invocations one at a time.
	mu sync.Mutex
}

// shard makes and applies stream shard k's records.
func (l *loader) shard(ctx context.Context, k int) error {
	sim := newSimSource(busySource, l.types, uint64(100+k))
	id := fmt.Sprintf("charts-%d", k)
	part := bucketing.CounterSlice / time.Duration(l.shards)
	recs := make([]events.DynamoDBEventRecord, 0, stackMapping.MaxRecords)
	for _, sg := range l.segs {
		for h := sg.from.Truncate(bucketing.CounterSlice); h.Before(sg.to); h = h.Add(bucketing.CounterSlice) {
			lo, hi := later(sg.from, h.Add(time.Duration(k)*part)), earlier(sg.to, h.Add(time.Duration(k+1)*part))
			for i := int((lo.Sub(sg.from) + sg.step - 1) / sg.step); ; i++ {
				at := sg.from.Add(time.Duration(i) * sg.step)
				if !at.Before(hi) {
					break
				}
				typ := l.types[i%len(l.types)]
				if !sg.cycle {
					typ = sim.randomType()
				}
				_, r := sim.record(i, at, typ)
				if recs = append(recs, r); len(recs) == stackMapping.MaxRecords {
					if err := l.apply(ctx, id, recs); err != nil {
						return err
					}
					recs = recs[:0]
				}
			}
		}
	}
	return l.apply(ctx, id, recs)
}

func (l *loader) apply(ctx context.Context, shard string, recs []events.DynamoDBEventRecord) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return deliver(ctx, l.c, batch{shard: shard, recs: recs})
}

// chart asks for row's chart four times (the first warms the container)
// and keeps the median latency; it checks the counts against what was
// sent and prices the same pages by DynamoDB's rule.
func chart(ctx context.Context, h *query.Handler, client *dynamodb.Client, row *CountsChartRow, segs []segment, end time.Time) error {
	row.Query = row.queryParams.Encode()
	req := events.APIGatewayV2HTTPRequest{Version: "2.0", RawPath: query.CountsRoute, RawQueryString: row.Query}
	req.RequestContext.HTTP.Method = "GET"
	var resp counts.Response
	ms, err := timedGet(ctx, h, req, 4, &resp)
	if err != nil {
		return err
	}
	row.LatencyMs = ms
	row.Requests, row.RCU, row.Series = resp.Plan.Requests, resp.Plan.ConsumedRCU, len(resp.Series)
	for _, s := range resp.Series {
		row.Buckets = len(s.Points)
		for _, p := range s.Points {
			row.Events += p.Count
		}
	}
	r, err := counts.ParseRequest(row.Query, end)
	if err != nil {
		return err
	}
	var want int64
	for _, sg := range segs {
		want += sg.events(r.From, r.To)
	}
	if row.Events != want {
		return fmt.Errorf("the chart counts %d events; %d were sent in its range", row.Events, want)
	}
	return pricePages(ctx, client, r, row)
}

// pricePages reads the counter items of r's range in the pages the chart
// read, and prices each page by DynamoDB's rule.
func pricePages(ctx context.Context, client *dynamodb.Client, r counts.Request, row *CountsChartRow) error {
	p := dynamodb.NewQueryPaginator(client, counts.Query(countsChartsTable, r))
	for p.HasMorePages() {
		out, err := p.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("read the counter items: %w", err)
		}
		page := 0
		for _, it := range out.Items {
			n := item.Bytes(it)
			page += n
			row.MaxItem = max(row.MaxItem, n)
		}
		row.Items += len(out.Items)
		row.ItemBytes += page
		row.PricedRCU += readUnits(page, false)
	}
	return nil
}
