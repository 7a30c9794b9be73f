package benchrun

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/shardline/shardline/bench/ddbstub"
	"github.com/shardline/shardline/internal/ddbclient"
	"github.com/shardline/shardline/internal/schema"
	"github.com/shardline/shardline/local/ddblocal"
)

// Options configure Run.
type Options struct {
	Out        io.Writer       // progress and the table
	ResultsDir string          // where results.json and results.md go; empty writes none
	Latency    time.Duration   // the stub's per-request latency
	Events     int             // records in shardline's Kinesis batch
	NaiveCap   int             // events the sequential naive path writes (its rate does not depend on the count)
	Counts     CountsOptions   // the counts benchmark; a zero Rate skips it
	Producer   ProducerOptions // the Kinesis producer benchmark; zero Events skips it
	Cost       CostOptions     // the cost model; no workloads skips it
}

// Report is everything a run measured.
type Report struct {
	When      time.Time     `json:"when"`
	Machine   string        `json:"machine"`
	LatencyMs float64       `json:"stub_latency_ms"`
	Ingest    []IngestRow   `json:"ingest"`
	Query     []QueryRow    `json:"query"`
	Counts    *CountsReport `json:"counts,omitempty"`
	Producer  []ProducerRow `json:"producer,omitempty"`
	// ProducerShards is the producer benchmark's stream's shards.
	ProducerShards int       `json:"producer_shards,omitempty"`
	ColdStart      []ColdRow `json:"cold_start"`
	// Cost is the cost model's answer (cost.md beside results.md).
	Cost *CostReport `json:"cost,omitempty"`
}

// Run measures and reports.
func Run(ctx context.Context, o Options) (*Report, error) {
	rep := &Report{When: time.Now().UTC(), Machine: fmt.Sprintf("%s/%s, %d CPUs, %s", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version()),
		LatencyMs: float64(o.Latency.Microseconds()) / 1000}
	fmt.Fprintln(o.Out, "starting DynamoDB Local and the latency stub ...")
	local, err := ddblocal.Start(ctx, ddblocal.Options{})
	if err != nil {
		return nil, err
	}
	defer local.Close()
	stub := ddbstub.New(o.Latency)
	defer stub.Close()
	stub.GSIAttr, stub.GSIKeys, stub.GSIProjected = schema.GSIPK, []string{schema.GSIPK, schema.SK, schema.PK}, schema.Projected
	now := time.Now().UTC().Truncate(time.Second)

	for _, ep := range []struct {
		name, url string
	}{{"DynamoDB Local", local.Endpoint}, {fmt.Sprintf("stub, %v per request", o.Latency), stub.URL}} {
		client := ddbclient.Static(ep.url, 64)
		table := "bench-ingest"
		if ep.url == local.Endpoint {
			if err := schema.Create(ctx, client, table); err != nil {
				return nil, err
			}
		}
		fmt.Fprintf(o.Out, "ingest on %s: shardline, %d records ...\n", ep.name, o.Events)
		sl, err := shardline(ctx, client, table, o.Events, now)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(o.Out, "ingest on %s: naive, %d events ...\n", ep.name, o.NaiveCap)
		nv, err := naive(ctx, client, table, o.NaiveCap, now)
		if err != nil {
			return nil, err
		}
		sl.Endpoint, nv.Endpoint = ep.name, ep.name
		sl.Speedup, nv.Speedup = sl.EventsPerSecond/nv.EventsPerSecond, 1
		rep.Ingest = append(rep.Ingest, sl, nv)
	}

	if len(o.Cost.Workloads) > 0 {
		if rep.Cost, err = measureCost(ctx, o.Out, o.Cost, ddbclient.Static(local.Endpoint, 64), stub.URL, now); err != nil {
			return nil, err
		}
	}

	if o.Producer.Events > 0 {
		rep.ProducerShards = o.Producer.Shards
		if rep.Producer, err = measureProducer(ctx, o.Out, o.Producer, now); err != nil {
			return nil, err
		}
	}

	fmt.Fprintln(o.Out, "query: loading a busy, a quiet and a raised source over seven days ...")
	client := ddbclient.Static(local.Endpoint, 64)
	if err := schema.Create(ctx, client, "bench-query"); err != nil {
		return nil, err
	}
	if err := loadQueryData(ctx, client, "bench-query", now); err != nil {
		return nil, err
	}
	if rep.Query, err = queries(ctx, client, "bench-query", now); err != nil {
		return nil, err
	}
	if o.Counts.Rate > 0 {
		if rep.Counts, err = measureCounts(ctx, o.Out, o.Counts, now); err != nil {
			return nil, err
		}
	}

	fmt.Fprintln(o.Out, "cold start: building the functions ...")
	tmp, err := os.MkdirTemp("", "shardline-bench")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	stub.Latency = 0
	if rep.ColdStart, err = coldStarts(ctx, tmp, stub.URL); err != nil {
		return nil, err
	}

	md := rep.Markdown()
	fmt.Fprintln(o.Out)
	fmt.Fprint(o.Out, md)
	if o.ResultsDir != "" {
		if err := os.MkdirAll(o.ResultsDir, 0o755); err != nil {
			return nil, err
		}
		js, _ := json.MarshalIndent(rep, "", "  ")
		if err := os.WriteFile(filepath.Join(o.ResultsDir, "results.json"), append(js, '\n'), 0o644); err != nil {
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(o.ResultsDir, "results.md"), []byte(md), 0o644); err != nil {
			return nil, err
		}
		fmt.Fprintf(o.Out, "\nwrote %s and %s\n", filepath.Join(o.ResultsDir, "results.json"), filepath.Join(o.ResultsDir, "results.md"))
		if rep.Cost != nil {
			path := filepath.Join(o.ResultsDir, "cost.md")
			if err := os.WriteFile(path, []byte(rep.Cost.Markdown()), 0o644); err != nil {
				return nil, fmt.Errorf("write %s: %w", path, err)
			}
			fmt.Fprintf(o.Out, "wrote %s\n", path)
		}
	}
	return rep, nil
}

// Markdown renders the report as tables.
func (r *Report) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# shardline benchmark\n\n%s, %s. The stub answers every request after %.0f ms and prices writes as DynamoDB does (1 WCU per KB, plus the GSI copy).\n\n",
		r.When.Format(time.RFC3339), r.Machine, r.LatencyMs)
	b.WriteString("## Ingest: one invocation\n\n| endpoint | write path | events | events/s | requests/event | WCU/event | vs naive |\n|---|---|---:|---:|---:|---:|---:|\n")
	for _, x := range r.Ingest {
		fmt.Fprintf(&b, "| %s | %s | %d | %.0f | %.3f | %.2f | %.1f× |\n", x.Endpoint, x.Design, x.Events, x.EventsPerSecond, x.RequestsPerEvent, x.WCUPerEvent, x.Speedup)
	}
	b.WriteString("\nThe naive path is sequential, so its rate does not depend on how many events it writes; it writes fewer to keep the run short.\n")
	if len(r.Producer) > 0 {
		producerMarkdown(&b, r.Producer, r.ProducerShards)
	}
	b.WriteString("\n## Query: dashboard pages on DynamoDB Local\n\n| source | query | asked | path | events | requests | RCU | latency (ms) |\n|---|---|---|---|---:|---:|---:|---:|\n")
	for _, x := range r.Query {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %d | %d | %.1f | %.1f |\n", x.Source, x.Query, x.Asked, x.Path, x.Events, x.Requests, x.RCU, x.LatencyMs)
	}
	b.WriteString("\nbusy: 150 events an hour, quiet: one an hour, over seven days, 4 shards and 1 GSI shard, written as they happen (an invocation per hour). The quiet source's days after its first have a GSI day bucket, since each follows a quiet day; the busy source's hours hold more than 100 events, so its days keep hour buckets. `by cost` is the default: the path whose estimate, from the days' hour indexes, costs fewer requests; `gsi` forces the GSI; `consistent` is `consistent=true`, which the base table's shards serve. Requests include the reads of each day's shard record and hour index not already in the container's cache.\n")
	if r.Counts != nil {
		r.Counts.markdown(&b)
	}
	if r.Cost != nil {
		b.WriteString("\n## What a million events cost\n\n| workload | shardline | bookkeeping / event WCU | seed design | Firehose → S3 |\n|---|---:|---:|---:|---:|\n")
		for _, w := range r.Cost.Workloads {
			fmt.Fprintf(&b, "| %s | %s | %.2f%% | %s | %s |\n", w.Workload.Name, usd(w.Total), 100*w.Share, usd(w.SeedTotal), usd(w.FirehoseTotal))
		}
		b.WriteString("\nEvery line item, and how they are measured: cost.md.\n")
	}
	b.WriteString("\n## Cold start\n\n| function | binary (linux/arm64) | to first request (ms) | against hello world | to first answer (ms) |\n|---|---:|---:|---:|---:|\n")
	for _, x := range r.ColdStart {
		fmt.Fprintf(&b, "| %s | %.1f MB | %.1f | %.2fx | %.1f |\n", x.Function, float64(x.BinaryBytes)/1e6, x.InitMs, x.InitRatio, x.FirstResponseMs)
	}
	b.WriteString("\nTimes are medians of 21 process starts under a local Lambda Runtime API stub (host build), each function built as `make build` builds it, the smallest Go function (`bench/hello`) among them as the baseline. " +
		"To first request is the init phase Lambda bills and waits for; to first answer adds the first invocation, whose DynamoDB requests go to the latency stub.\n")
	return b.String()
}
