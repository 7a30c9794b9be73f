package benchrun

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/shardline/shardline/internal/ddbclient"
	"github.com/shardline/shardline/local/ddblocal"
	"github.com/shardline/shardline/ops/plural"
)

// CountsOptions size the counts benchmark (issue 10): what it costs to keep
// exact counts of a busy source and to chart them.
type CountsOptions struct {
	Rate     int           // the busy source's events a second
	Types    int           // its event types
	Measured time.Duration // event time written by the real ingest handler, ending at an hour's end
	Prefill  time.Duration // event time before it, in the same hour, counted from simulated stream records
	Days     int           // days of counter items behind the charts; before the last, one event a minute of each type
	HotRate  int           // the hot source of the heat model
}

// DefaultCountsOptions is what make bench runs.
var DefaultCountsOptions = CountsOptions{Rate: 100, Types: 10, Measured: 10 * time.Minute, Prefill: 50 * time.Minute, Days: 31, HotRate: 50000}

// Limits the issue sets.
const (
	limitWCUPerEvent   = 0.05
	limitDayRequests   = 10
	limitDayRCU        = 50.0
	limitMonthRequests = 40
	limitPartitionWCU  = 1000.0
)

// The benchmark's sources and tables.
const (
	busySource          = "fleet/busy"
	hotSource           = "fleet/hot"
	countsEventsTable   = "bench-counts-events"
	countsChartsTable   = "bench-counts-charts"
	countsHeatTable     = "bench-counts-heat"
	countsCounterTables = "bench-counts-s%d" // one per stream shard count
)

// CountsReport is what the counts benchmark measured.
type CountsReport struct {
	Rate         int              `json:"busy_events_per_second"`
	Types        int              `json:"types"`
	LocalShards  int              `json:"local_stream_shards"`
	RecordBytes  int              `json:"stream_record_bytes"`
	Write        []CountsWriteRow `json:"write"`
	Charts       []CountsChartRow `json:"charts"`
	MonthAtRate  int              `json:"month_requests_if_every_hour_at_rate"`
	Heat         CountsHeat       `json:"heat"`
	Targets      []Target         `json:"targets"`
	Days         int              `json:"days"`
	MeasuredMins int              `json:"measured_minutes"`
}

// Target is one of the cost targets and whether the run met it.
type Target struct {
	Target   string `json:"target"`
	Limit    string `json:"limit"`
	Measured string `json:"measured"`
	Met      bool   `json:"met"`
}

// measureCounts runs the three parts, each DynamoDB Local fresh: the
// ingested events on one, stopped once their stream is read (DynamoDB
// Local holding them answers every later request several times slower),
// the counters on another. Then it checks the targets and prints them.
func measureCounts(ctx context.Context, out io.Writer, o CountsOptions, now time.Time) (*CountsReport, error) {
	start := time.Now()
	hourEnd := now.Truncate(time.Hour)
	fmt.Fprintf(out, "counts: %d events/s of %d types for %v through the ingest handler ...\n", o.Rate, o.Types, o.Measured)
	in, err := withLocal(ctx, func(client *dynamodb.Client, endpoint string) (ingested, error) {
		return ingestMeasured(ctx, client, endpoint, o, hourEnd)
	})
	if err != nil {
		return nil, fmt.Errorf("counts, ingest: %w", err)
	}
	return withLocal(ctx, func(client *dynamodb.Client, _ string) (*CountsReport, error) {
		rep := &CountsReport{Rate: o.Rate, Types: o.Types, Days: o.Days, MeasuredMins: int(o.Measured / time.Minute),
			LocalShards: in.shards, RecordBytes: in.recordBytes}
		fmt.Fprintf(out, "counts: the counter over the busy hour, on 1 and 4 stream shards (%v so far) ...\n", since(start))
		if rep.Write, err = measureWrites(ctx, client, o, hourEnd, in); err != nil {
			return nil, fmt.Errorf("counts, write cost: %w", err)
		}
		fmt.Fprintf(out, "counts: %d days of counter items, then the charts (%v so far) ...\n", o.Days, since(start))
		if rep.Charts, rep.MonthAtRate, err = measureCharts(ctx, client, o, hourEnd.Add(30*time.Minute)); err != nil {
			return nil, fmt.Errorf("counts, charts: %w", err)
		}
		fmt.Fprintf(out, "counts: a busy hour of a %d events/s source (%v so far) ...\n", o.HotRate, since(start))
		if rep.Heat, err = measureHeat(ctx, client, o, heatShards, rep.RecordBytes, hourEnd.Add(-time.Hour)); err != nil {
			return nil, fmt.Errorf("counts, heat: %w", err)
		}
		rep.Targets = rep.check()
		fmt.Fprintf(out, "counts: done in %v; the targets of issue 10:\n", since(start))
		for _, t := range rep.Targets {
			verdict := "met"
			if !t.Met {
				verdict = "NOT MET"
			}
			fmt.Fprintf(out, "  [%s] %s: %s (limit %s)\n", verdict, t.Target, t.Measured, t.Limit)
		}
		return rep, nil
	})
}

// withLocal runs f on a DynamoDB Local of its own.
func withLocal[T any](ctx context.Context, f func(client *dynamodb.Client, endpoint string) (T, error)) (T, error) {
	local, err := ddblocal.Start(ctx, ddblocal.Options{})
	if err != nil {
		var zero T
		return zero, err
	}
	defer local.Close()
	return f(ddbclient.Static(local.Endpoint, 64), local.Endpoint)
}

func since(t time.Time) time.Duration { return time.Since(t).Round(time.Second) }

// check compares the measurements with the targets.
func (r *CountsReport) check() []Target {
	var out []Target
	write := Target{Target: fmt.Sprintf("counting a busy source (%d events/s, %d types), WCU per event over an hour", r.Rate, r.Types),
		Limit: fmt.Sprintf("≤ %.2f", limitWCUPerEvent), Met: len(r.Write) > 0}
	for _, w := range r.Write {
		if w.Part != partHour {
			continue
		}
		perEvent := max(float64(w.WCU), w.ReportedWCU) / float64(w.Events) // the higher of the two pricings
		write.Measured += fmt.Sprintf("%s%.4f with %s", sep(write.Measured), perEvent, plural.Count(w.StreamShards, "stream shard", "stream shards"))
		write.Met = write.Met && perEvent <= limitWCUPerEvent
	}
	out = append(out, write)
	for _, c := range r.Charts {
		switch c.Kind {
		case chartDay:
			rcu := max(c.RCU, c.PricedRCU)
			out = append(out, Target{Target: "a 24-hour chart at 1 minute by type (" + fmt.Sprint(r.Types) + " types)",
				Limit:    fmt.Sprintf("≤ %d requests, ≤ %.0f RCU", limitDayRequests, limitDayRCU),
				Measured: fmt.Sprintf("%s, %.1f RCU (DynamoDB Local), %.1f RCU (priced)", plural.Count(c.Requests, "request", "requests"), c.RCU, c.PricedRCU),
				Met:      c.Requests <= limitDayRequests && rcu <= limitDayRCU})
		case chartMonth:
			out = append(out, Target{Target: "a 31-day chart at 1 hour by type",
				Limit:    fmt.Sprintf("≤ %d requests", limitMonthRequests),
				Measured: fmt.Sprintf("%d requests; %d if every hour ran at %d events/s", c.Requests, r.MonthAtRate, r.Rate),
				Met:      max(c.Requests, r.MonthAtRate) <= limitMonthRequests})
		}
	}
	h := r.Heat
	if len(h.Rows) > 2 {
		out = append(out, Target{Target: fmt.Sprintf("a %d events/s source never makes a counter item hot", h.Rate),
			Limit: fmt.Sprintf("< %.0f WCU/s on the counter's partition key", limitPartitionWCU),
			Measured: fmt.Sprintf("at most %.0f WCU/s at an item's end on its %d stream shards, %.0f on %d; the limit would take %d",
				h.Rows[1].WCUPerSecond, h.Rows[1].StreamShards, h.Rows[2].WCUPerSecond, h.Rows[2].StreamShards, h.BreakEvenShards),
			Met: h.Rows[2].WCUPerSecond < limitPartitionWCU})
	}
	return out
}

func sep(s string) string {
	if s == "" {
		return ""
	}
	return "; "
}
