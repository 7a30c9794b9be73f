package counts

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/shardline/shardline/internal/emf"
)

// Metrics the scheduled fold writes (namespace emf.Namespace, with
// FoldDimensions) that the stack alarms on.
const (
	// MetricFoldRuns is the fold runs an invocation wrote: none in two
	// minutes while the counter writes links (MetricLinks) means the
	// counts stopped moving.
	MetricFoldRuns = "FoldRuns"
)

// FoldDimensions are the dimensions of the scheduled fold's metrics.
func FoldDimensions() map[string]string { return map[string]string{"Function": "countfold"} }

// FoldEnvVars lists every variable the scheduled fold reads: the counter's,
// and EnvBuckets.
var FoldEnvVars = []string{EnvTable, EnvRetentionDays, EnvLogLevel, EnvBuckets}

// FoldConfig is the scheduled fold's configuration.
type FoldConfig struct {
	Config
	Buckets int
}

// FoldConfigFromEnv reads the scheduled fold's configuration through
// getenv. Every error names the variable and what it accepts.
func FoldConfigFromEnv(getenv func(string) string) (FoldConfig, error) {
	c, err := ConfigFromEnv(getenv)
	fc := FoldConfig{Config: c}
	if err != nil {
		return fc, err
	}
	fc.Buckets, err = ParseBuckets(getenv(EnvBuckets))
	return fc, err
}

// FoldFunction is the scheduled fold Lambda function (functions/countfold):
// LSM.Minute once a minute, with its logs and metrics. Build one per
// container with NewFold.
type FoldFunction struct {
	LSM     *LSM
	Log     *slog.Logger // default: discard
	Metrics *emf.Logger  // default: none
}

// NewFold returns the scheduled fold for cfg, reading and writing through
// client.
func NewFold(cfg FoldConfig, client LSMClient, o Options) *FoldFunction {
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &FoldFunction{
		LSM: &LSM{Client: client, Table: cfg.Table, Buckets: cfg.Buckets, Retention: cfg.Retention},
		Log: log, Metrics: o.Metrics,
	}
}

// Invoke is the Lambda entry point, triggered by the stack's schedule
// every minute. An error fails the invocation; the next minute's fold and
// roll-up finish what it left (each step is conditional).
func (f *FoldFunction) Invoke(ctx context.Context, ev events.EventBridgeEvent) error {
	start := time.Now()
	st, err := f.LSM.Minute(ctx)
	if err != nil {
		err = fmt.Errorf("scheduled fold (%s at %s): %w", ev.DetailType, ev.Time.Format(time.RFC3339), err)
	}
	f.report(ctx, st, err, time.Since(start))
	return err
}

// report logs one Minute and writes its metrics.
func (f *FoldFunction) report(ctx context.Context, st MinuteStats, err error, d time.Duration) {
	attrs := []slog.Attr{
		slog.Int("runs", st.Folds),
		slog.Int("links", st.Fold.Links),
		slog.Int("tuples", st.Fold.Tuples),
		slog.Int("packs", st.Fold.Packs),
		slog.Bool("rolled", st.Rolled),
		slog.Int("items", st.Rollup.Items),
		slog.Bool("left", st.Rollup.Left), // the roll-up's budget ran out: the next minute goes on with it
		slog.Int("conflicts", st.Rollup.Conflicts),
		slog.Float64("wcu", st.Fold.WCU+st.Rollup.WCU),
		slog.Int64("overflowed", st.Rollup.Overflowed),
		slog.Duration("duration", d),
	}
	level := slog.LevelInfo
	if err != nil {
		level = slog.LevelWarn
		attrs = append(attrs, slog.String("error", err.Error()))
	}
	for source, n := range st.Rollup.OverflowBySource {
		f.Log.LogAttrs(ctx, slog.LevelWarn, "counted without type", slog.String("source", source), slog.Int64("events", n),
			slog.String("why", fmt.Sprintf("ten minutes of this source have more than %d types: the rest are counted in the overflow, "+
				"answered as the \"other\" series of GET /v1/counts; if its producer puts an id in `type`, move it to `subject` or `data`", f.LSM.maxTypes())))
	}
	if merr := f.Metrics.Log(ctx, f.Log, level, "fold", time.Now(), attrs,
		emf.Metric{Name: MetricFoldRuns, Value: float64(st.Folds), Unit: "Count"},
		emf.Metric{Name: "FoldedLinks", Value: float64(st.Fold.Links), Unit: "Count"},
		emf.Metric{Name: "RolledItems", Value: float64(st.Rollup.Items), Unit: "Count"},
		emf.Metric{Name: "ConsumedWCU", Value: st.Fold.WCU + st.Rollup.WCU, Unit: "Count"},
		emf.Metric{Name: MetricOverflow, Value: float64(st.Rollup.Overflowed), Unit: "Count"},
	); merr != nil {
		f.Log.Warn("metrics", slog.String("error", merr.Error()))
	}
}
