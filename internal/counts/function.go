package counts

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/shardline/shardline/internal/emf"
)

// Metrics the counter function writes (namespace emf.Namespace, with
// Dimensions) that the stack alarms on.
const (
	// MetricOverflow is the events counted without their type because
	// their counter item keeps MaxTypesPerItem types already (or
	// DynamoDB refused an update with types): a producer with too many
	// types, often an id in `type`.
	MetricOverflow = "CounterOverflow"
	// MetricLinks is the L0 links the counter wrote: with no fold run
	// (MetricFoldRuns) beside them, the counts stopped moving.
	MetricLinks = "CounterLinks"
)

// Dimensions are the dimensions of the counter function's metrics.
func Dimensions() map[string]string { return map[string]string{"Function": "counter"} }

// Function is the counter Lambda function: a Counter with its logs and
// metrics. Build one per container with New.
type Function struct {
	Counter *Counter
	Log     *slog.Logger // default: discard
	Metrics *emf.Logger  // default: none
}

// Options are the parts of a Function that the local server and tests vary.
type Options struct {
	Logger  *slog.Logger // default: discard
	Metrics *emf.Logger  // default: none
}

// New returns the counter function for cfg, writing through client.
func New(cfg Config, client Client, o Options) *Function {
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Function{Counter: &Counter{Client: client, Table: cfg.Table, Retention: cfg.Retention}, Log: log, Metrics: o.Metrics}
}

// Invoke is the Lambda entry point. An error fails the invocation, and the
// mapping delivers the batch again; what was counted is not counted twice.
// A failed invocation leaves a note of what it did not count, for a
// redrive should the mapping give the batch up (NoteFailure).
func (f *Function) Invoke(ctx context.Context, ev events.DynamoDBTimeWindowEvent) (events.DynamoDBTimeWindowEventResponse, error) {
	start := time.Now()
	work, cancel := reserve(ctx)
	resp, st, err := f.Counter.Handle(work, ev)
	cancel()
	if err != nil && ev.ShardID != "" {
		if nerr := f.Counter.NoteFailure(ctx, ev.ShardID, ev.Records); nerr != nil {
			f.Log.Warn("count: could not note what the failed batch left uncounted; a redrive of it may have to be decided by hand",
				slog.String("shard", ev.ShardID), slog.String("error", nerr.Error()))
		}
	}
	attrs := []slog.Attr{
		slog.String("shard", ev.ShardID),
		slog.Int("records", st.Records),
		slog.Int("counted", st.Counted),
		slog.Int("skipped", st.Skipped),
		slog.Int("seen", st.Seen),
		slog.Int("items", st.Items),
		slog.Int("updates", st.Updates),
		slog.Int("conflicts", st.Conflicts),
		slog.Float64("wcu", st.WCU),
		slog.Int("overflowed", st.Overflowed),
		slog.Int("fallbacks", st.Fallbacks),
		slog.Duration("duration", time.Since(start)),
	}
	level := slog.LevelInfo
	if err != nil {
		level = slog.LevelWarn
		attrs = append(attrs, slog.String("error", err.Error()))
	}
	for source, n := range st.OverflowBySource {
		f.Log.LogAttrs(ctx, slog.LevelWarn, "counted without type", slog.String("source", source), slog.Int("events", n),
			slog.String("why", fmt.Sprintf("ten minutes of this source have more than %d types: the rest are counted in the overflow, "+
				"answered as the \"other\" series of GET /v1/counts; if its producer puts an id in `type`, move it to `subject` or `data`", f.Counter.maxTypes())))
	}
	if merr := f.Metrics.Log(ctx, f.Log, level, "count", time.Now(), attrs,
		emf.Metric{Name: "Counted", Value: float64(st.Counted), Unit: "Count"},
		emf.Metric{Name: "Redelivered", Value: float64(st.Seen), Unit: "Count"},
		emf.Metric{Name: "CounterUpdates", Value: float64(st.Updates), Unit: "Count"},
		emf.Metric{Name: "CounterConflicts", Value: float64(st.Conflicts), Unit: "Count"},
		emf.Metric{Name: "ConsumedWCU", Value: st.WCU, Unit: "Count"},
		emf.Metric{Name: MetricOverflow, Value: float64(st.Overflowed), Unit: "Count"},
		emf.Metric{Name: "CounterFallbacks", Value: float64(st.Fallbacks), Unit: "Count"},
	); merr != nil {
		f.Log.Warn("metrics", slog.String("error", merr.Error()))
	}
	return resp, err
}
