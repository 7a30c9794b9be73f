package benchrun

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/shardline/shardline/bench/ddbstub"
	"github.com/shardline/shardline/internal/ddbclient"
	"github.com/shardline/shardline/internal/item"
	"github.com/shardline/shardline/internal/schema"
	"github.com/shardline/shardline/local/ddblocal"
)

// CostOptions size the cost model (issue 22); no workloads skips it.
type CostOptions struct {
	Workloads []CostWorkload
}

// DefaultCostOptions is what make bench runs.
var DefaultCostOptions = CostOptions{Workloads: DefaultCostWorkloads}

// bookkeepingLimit is issue 22's target: the pipeline's own writes at most
// 2% of the event items' write units.
const bookkeepingLimit = 0.02

// CostReport is the cost model's answer: a million events priced at each
// workload, with the two anchors.
type CostReport struct {
	Prices    Prices       `json:"prices"`
	Workloads []CostResult `json:"workloads"`
}

// CostResult is one workload priced.
type CostResult struct {
	Workload      CostWorkload `json:"workload"`
	Measured      CostMeasured `json:"measured"`
	Usage         Usage        `json:"usage_per_million"`
	Lines         []Line       `json:"lines"`
	Total         float64      `json:"total_usd"`
	Share         float64      `json:"bookkeeping_share"`
	Seed          []Line       `json:"seed_lines"`
	SeedTotal     float64      `json:"seed_total_usd"`
	SeedKeyWCU    float64      `json:"seed_key_wcu_per_second"`
	Firehose      []Line       `json:"firehose_lines"`
	FirehoseTotal float64      `json:"firehose_total_usd"`
	Seconds       float64      `json:"run_seconds"`
}

// measureCost runs every workload of o, each on a fresh table of the
// DynamoDB Local behind local, the event items on the stub at stubURL.
func measureCost(ctx context.Context, out io.Writer, o CostOptions, local *dynamodb.Client, stubURL string, now time.Time) (*CostReport, error) {
	env := costEnv{local: local, stubURL: stubURL, start: now.Truncate(24 * time.Hour), prices: ListPrices}
	seed, err := naive(ctx, ddbclient.Static(stubURL, 8), "bench-cost-seed", 200, now)
	if err != nil {
		return nil, fmt.Errorf("cost model, the seed design: %w", err)
	}
	env.seedWRU, env.seedSize = seed.WCUPerEvent, item.Bytes(naiveItem(0, now))
	rep := &CostReport{Prices: env.prices}
	for i, w := range o.Workloads {
		fmt.Fprintf(out, "cost: %s, %v of events through the handlers ...\n", w.Name, w.Window)
		env.table = fmt.Sprintf("bench-cost-%d-%d", i, now.UnixNano())
		r, err := priceWorkload(ctx, w, env)
		if err != nil {
			return nil, fmt.Errorf("cost model, %s: %w", w.Name, err)
		}
		fmt.Fprintf(out, "cost: %s: %s per million events; bookkeeping %.2f%% of the event items' WCU (%.0f s)\n",
			w.Name, usd(r.Total), 100*r.Share, r.Seconds)
		rep.Workloads = append(rep.Workloads, r)
	}
	return rep, nil
}

// priceWorkload measures one workload and prices it with its anchors.
func priceWorkload(ctx context.Context, w CostWorkload, env costEnv) (CostResult, error) {
	start := time.Now()
	probe := telemetry("e0", w.Groups[0].name(0), "t", 0, env.start)
	s, err := newSim(ctx, w, env, len(probe))
	if err != nil {
		return CostResult{}, err
	}
	if err := s.run(ctx); err != nil {
		return CostResult{}, err
	}
	m := s.measured()
	if m.Events == 0 || m.CounterEvents == 0 || m.ArchiveEvents == 0 {
		return CostResult{}, fmt.Errorf("the window (%v) closed no batch of some function (ingested %d, counted %d, archived %d events): lengthen it",
			w.Window, m.Events, m.CounterEvents, m.ArchiveEvents)
	}
	u := s.usage(m)
	seed, fh := s.anchors(m)
	r := CostResult{Workload: w, Measured: m, Usage: u, Lines: u.Lines(env.prices, true), Share: u.BookkeepingShare(),
		Seed: seed.Lines(env.prices, false), Firehose: fh.Lines(env.prices, false),
		SeedKeyWCU: env.seedWRU * w.Rate(), Seconds: time.Since(start).Seconds()}
	r.Total, r.SeedTotal, r.FirehoseTotal = Total(r.Lines), Total(r.Seed), Total(r.Firehose)
	return r, nil
}

// Markdown renders the cost model's tables.
func (c *CostReport) Markdown() string {
	var b strings.Builder
	b.WriteString("# What a million events cost\n\n")
	fmt.Fprintf(&b, "List prices, %s, read %s from %s.\n\n", c.Prices.Region, c.Prices.Read, c.Prices.Source)
	b.WriteString("| workload | shardline | top three line items | bookkeeping / event WCU | seed design (PutItem, one key) | Firehose → S3 |\n|---|---:|---|---:|---:|---:|\n")
	for _, r := range c.Workloads {
		var top []string
		for _, l := range Top(r.Lines, 3) {
			top = append(top, fmt.Sprintf("%s %s %s", l.Service, l.Item, usd(l.USD)))
		}
		seed := usd(r.SeedTotal)
		if r.SeedKeyWCU > partitionWCU {
			seed += fmt.Sprintf(" (cannot run: %.0f WCU/s on one key)", r.SeedKeyWCU)
		} else if r.SeedKeyWCU >= partitionWCU*0.8 {
			seed += fmt.Sprintf(" (at the key's ceiling: %.0f WCU/s)", r.SeedKeyWCU)
		}
		verdict := "met"
		if r.Share > bookkeepingLimit {
			verdict = "NOT MET"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %.2f%% (%s) | %s | %s |\n", r.Workload.Name, usd(r.Total), strings.Join(top, "; "),
			100*r.Share, verdict, seed, usd(r.FirehoseTotal))
	}
	for _, r := range c.Workloads {
		r.markdown(&b)
	}
	b.WriteString("\n" + costMethod)
	return b.String()
}

func (r CostResult) markdown(b *strings.Builder) {
	m := r.Measured
	fmt.Fprintf(b, "\n## %s\n\n", r.Workload.Name)
	fmt.Fprintf(b, "Measured: %.0f s of events from a UTC midnight (%s events ingested, %s counted, %s archived, in whole batches), "+
		"%d Kinesis shards, %d ingest containers, %d table stream shards; the run took %.0f s.\n\n",
		m.WindowSeconds, commas(int64(m.Events)), commas(int64(m.CounterEvents)), commas(int64(m.ArchiveEvents)),
		m.KinesisShards, m.Containers, m.StreamShards, r.Seconds)
	b.WriteString("| service | line item | quantity per million events | unit | cost |\n|---|---|---:|---|---:|\n")
	for _, l := range r.Lines {
		name := l.Item
		if l.Bookkeeping {
			name += " †"
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s |\n", l.Service, name, qty(l.Quantity), l.Unit, usd(l.USD))
	}
	fmt.Fprintf(b, "| **all** | | | | **%s** |\n\n", usd(r.Total))
	var svc []string
	for _, l := range ByService(r.Lines) {
		svc = append(svc, fmt.Sprintf("%s %s", l.Service, usd(l.USD)))
	}
	fmt.Fprintf(b, "By service: %s. † the pipeline's own bookkeeping: %.2f%% of the event items' WCU (%.1f WCU per thousand events; target ≤ 2%%).\n\n",
		strings.Join(svc, ", "), 100*r.Share, r.Usage.Bookkeeping()/1000)
	fmt.Fprintf(b, "Log lines a function writes itself at info, per invocation: ingest %.2f, counter %.2f, archive %.2f (target ≤ 1; the invocation's EMF metrics ride in its log line, emf.NewInLog, and Lambda adds START, END and REPORT).\n\n",
		perInv(m.LogLines[0], m.Invocations[0]), perInv(m.LogLines[1], m.Invocations[1]), perInv(m.LogLines[2], m.Invocations[2]))
	fmt.Fprintf(b, "Bookkeeping as measured in the window: hour marks %d writes (%.0f WRU) for %d (container, source) pairs; shard records %d writes (%.0f WRU) and catalogue %d (%.0f WRU) for %d sources; counter %d updates (%.0f WRU) for %d events; demand reports %d; other keys %d.\n\n",
		m.HourMarks.Writes, m.HourMarks.WRU, m.Pairs, m.ShardRecords.Writes, m.ShardRecords.WRU,
		m.Catalogue.Writes, m.Catalogue.WRU, m.Sources, m.Counter.Writes, m.Counter.WRU, m.CounterEvents,
		m.Demand.Writes, m.Other.Writes)
	b.WriteString("Anchors, the same million events:\n\n| design | line item | quantity | unit | cost |\n|---|---|---:|---|---:|\n")
	for _, l := range r.Seed {
		fmt.Fprintf(b, "| seed articles | %s %s | %s | %s | %s |\n", l.Service, l.Item, qty(l.Quantity), l.Unit, usd(l.USD))
	}
	fmt.Fprintf(b, "| seed articles | **all** | | | **%s** |\n", usd(r.SeedTotal))
	for _, l := range r.Firehose {
		fmt.Fprintf(b, "| Firehose → S3 | %s %s | %s | %s | %s |\n", l.Service, l.Item, qty(l.Quantity), l.Unit, usd(l.USD))
	}
	fmt.Fprintf(b, "| Firehose → S3 | **all** | | | **%s** |\n", usd(r.FirehoseTotal))
}

func perInv(lines, inv int) float64 { return float64(lines) / float64(max(1, inv)) }

// costMethod explains the tables; docs/cost.md says more.
const costMethod = `## How it is measured

Each workload's events, ~500-byte CloudEvents sent at the workload's rates from random phases, go for the window shown (from a UTC midnight) through the real functions: ` + "`ingest.Handler.Kinesis`" + ` on a fleet of containers (a Kinesis shard per 800 records/s, two containers a shard as ParallelizationFactor 2 makes, each record to a container by its partition key, the event's id; batches cut as the mapping cuts them: 1 s, 500 records), ` + "`counts.Function.Invoke`" + ` and ` + "`archive.Function.Invoke`" + ` on the table stream's records (a stream shard per 1,000 WCU/s of the table, at least 4; batches cut as the stack's mappings cut them; only whole batches count). Event items go to the latency stub and are priced from their sizes (item and GSI copy apart); every other request goes to DynamoDB Local, which keeps the items and decides the conditions, and is priced by DynamoDB's rules from the item's size before and after. The handlers' clock is the simulated one. Lambda compute is each invocation's measured wall time on this machine, rounded up to the millisecond, at the stack's memory sizes; logs are what the functions wrote at info plus Lambda's START/END/REPORT lines and CloudWatch's 26 bytes per log event.

Scaled to a million events: per-event items by the events their function saw; the hour marks' writes by the sources a steady hour has (a container reads a source's hour index before it marks an hour, so the first container to meet the hour marks it and the others find the mark), their reads by the (container, source) pairs a steady hour has, the shard records and catalogue by the sources a day has, the shard-record reads by the pairs a day has plus a re-read per pair after each minute of cache. Kinesis shard-hours are the stream's shards over the time a million events take; the stream keeps its default 24 h, so no extended retention. DynamoDB storage is the items and GSI copies (with 100 bytes of overhead each) for the 30-day TTL; S3 storage is one month of the archived objects. The query function's cost depends on the dashboards, not on the events: see results.md.

Anchors: the seed articles' write path (` + "`naive`" + `: one PutItem per event under the key EVENTS, no GSI, items kept a month) and Kinesis Data Firehose Direct PUT to S3 (each record rounded up to 5 KB, gzip, default 5 MB / 300 s buffering; stored bytes from the sample's measured gzip ratio). Neither includes the compute that calls it.
`

// RunCost runs the cost model alone (shardline-bench -cost-only): DynamoDB
// Local and the stub, the workloads of o.Cost, then cost.md and cost.json
// in o.ResultsDir, leaving the other results as they are.
func RunCost(ctx context.Context, o Options) (*CostReport, error) {
	fmt.Fprintln(o.Out, "starting DynamoDB Local and the latency stub ...")
	local, err := ddblocal.Start(ctx, ddblocal.Options{})
	if err != nil {
		return nil, err
	}
	defer local.Close()
	stub := ddbstub.New(o.Latency)
	defer stub.Close()
	stub.GSIAttr, stub.GSIKeys, stub.GSIProjected = schema.GSIPK, []string{schema.GSIPK, schema.SK, schema.PK}, schema.Projected
	rep, err := measureCost(ctx, o.Out, o.Cost, ddbclient.Static(local.Endpoint, 64), stub.URL, time.Now().UTC().Truncate(time.Second))
	if err != nil {
		return nil, err
	}
	md := rep.Markdown()
	fmt.Fprint(o.Out, "\n"+md)
	if o.ResultsDir == "" {
		return rep, nil
	}
	if err := os.MkdirAll(o.ResultsDir, 0o755); err != nil {
		return nil, fmt.Errorf("results directory: %w", err)
	}
	js, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode the cost report: %w", err)
	}
	for name, body := range map[string][]byte{"cost.md": []byte(md), "cost.json": append(js, '\n')} {
		path := filepath.Join(o.ResultsDir, name)
		if err := os.WriteFile(path, body, 0o644); err != nil {
			return nil, fmt.Errorf("write %s: %w", path, err)
		}
		fmt.Fprintf(o.Out, "wrote %s\n", path)
	}
	return rep, nil
}
