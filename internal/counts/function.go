package counts

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/shardline/shardline/internal/emf"
)

// Metrics the stack alarms on (namespace emf.Namespace).
const (
	// MetricOverflow is the events counted without their type because
	// their ten minutes keep MaxTypesPerItem types already: a producer
	// with too many types, often an id in `type`. The scheduled fold's
	// roll-up writes it (FoldDimensions), where types overflow.
	MetricOverflow = "CounterOverflow"
	// MetricLinks is the L0 links the counter wrote: with no fold run
	// (MetricFoldRuns) beside them, the counts stopped moving.
	MetricLinks = "CounterLinks"
)

// Dimensions are the dimensions of the counter function's metrics
// (MetricLinks).
func Dimensions() map[string]string { return map[string]string{"Function": "counter"} }

// Function is the counter Lambda function: a Chain (L0 of the counts,
// docs/counts.md) with its logs and metrics. Build one per container with
// New.
type Function struct {
	Chain   *Chain
	Log     *slog.Logger // default: discard
	Metrics *emf.Logger  // default: none
}

// Options are the parts of a Function that the local server and tests vary.
type Options struct {
	Logger  *slog.Logger // default: discard
	Metrics *emf.Logger  // default: none
}

// New returns the counter function for cfg, writing through client.
func New(cfg Config, client ChainClient, o Options) *Function {
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Function{Chain: &Chain{Client: client, Table: cfg.Table, Retention: cfg.Retention}, Log: log, Metrics: o.Metrics}
}

// Invoke is the Lambda entry point: the batch's events, above its stream
// shard's tip, become the shard's next link. An error fails the
// invocation, and the mapping delivers the batch again; what a link holds
// is not counted twice. No note is left on failure: the links are the
// record of what was counted (Chain.Redrive).
func (f *Function) Invoke(ctx context.Context, ev events.DynamoDBTimeWindowEvent) (events.DynamoDBTimeWindowEventResponse, error) {
	start := time.Now()
	resp, st, err := f.Chain.HandleChain(ctx, ev)
	if err != nil {
		err = fmt.Errorf("count %d records of stream shard %q: %w", len(ev.Records), ev.ShardID, err)
	}
	attrs := []slog.Attr{
		slog.String("shard", ev.ShardID),
		slog.Int("records", st.Records),
		slog.Int("counted", st.Counted),
		slog.Int("skipped", st.Skipped),
		slog.Int("seen", st.Seen),
		slog.Int("links", st.Links),
		slog.Int("puts", st.Puts),
		slog.Int("conflicts", st.Conflicts),
		slog.Int("reads", st.Reads),
		slog.Int("bytes", st.Bytes),
		slog.Float64("wcu", st.WCU),
		slog.Duration("duration", time.Since(start)),
	}
	level := slog.LevelInfo
	if err != nil {
		level = slog.LevelWarn
		attrs = append(attrs, slog.String("error", err.Error()))
	}
	if merr := f.Metrics.Log(ctx, f.Log, level, "count", time.Now(), attrs,
		emf.Metric{Name: "Counted", Value: float64(st.Counted), Unit: "Count"},
		emf.Metric{Name: "Redelivered", Value: float64(st.Seen), Unit: "Count"},
		emf.Metric{Name: MetricLinks, Value: float64(st.Links), Unit: "Count"},
		emf.Metric{Name: "CounterConflicts", Value: float64(st.Conflicts), Unit: "Count"},
		emf.Metric{Name: "ConsumedWCU", Value: st.WCU, Unit: "Count"},
	); merr != nil {
		f.Log.Warn("metrics", slog.String("error", merr.Error()))
	}
	return resp, err
}
