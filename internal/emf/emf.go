// Package emf writes CloudWatch metrics as Embedded Metric Format log lines:
// CloudWatch Logs turns them into metrics, with no API call from the function.
package emf

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"
)

// Namespace is the CloudWatch namespace of shardline's metrics.
const Namespace = "shardline"

// Logger writes metric lines to one writer (the function's stdout).
type Logger struct {
	mu  sync.Mutex
	out io.Writer
	// Dimensions are attached to every line, such as {"Function": "ingest"}.
	dims map[string]string
	// inLog: Log puts the metrics into the log record (NewInLog).
	inLog bool
}

// New returns a Logger writing to out with the given dimensions.
func New(out io.Writer, dims map[string]string) *Logger {
	return &Logger{out: out, dims: dims}
}

// NewInLog is New for a function whose JSON log goes to out too (its
// stdout, in Lambda): Log then writes an invocation's log record and its
// metrics as one line, an Embedded Metric Format document that is also
// the log record, instead of two.
func NewInLog(out io.Writer, dims map[string]string) *Logger {
	return &Logger{out: out, dims: dims, inLog: true}
}

// Log logs msg with attrs at level on log and writes metrics. For a
// Logger made by NewInLog whose log writes level, that is one line: the
// record carries the metrics as an Embedded Metric Format document (the
// metric values and dimensions as top-level fields, and "_aws"), which
// CloudWatch Logs reads as metrics from a JSON log line like any other.
// log must be a JSON logger without groups. When log does not write level
// (LOG_LEVEL above it), the metrics still go out, on a line of their own
// as Put writes them: no metric is lost to the log level. A nil Logger
// only logs.
func (l *Logger) Log(ctx context.Context, log *slog.Logger, level slog.Level, msg string, now time.Time, attrs []slog.Attr, metrics ...Metric) error {
	if l == nil || !l.inLog || len(metrics) == 0 || !log.Enabled(ctx, level) {
		log.LogAttrs(ctx, level, msg, attrs...)
		return l.Put(now, metrics...)
	}
	all := make([]slog.Attr, 0, len(attrs)+len(l.dims)+len(metrics)+1)
	all = append(all, attrs...)
	for k, v := range l.dims {
		all = append(all, slog.String(k, v))
	}
	for _, m := range metrics {
		all = append(all, slog.Float64(m.Name, m.Value))
	}
	all = append(all, slog.Any("_aws", l.metadata(now, metrics)))
	log.LogAttrs(ctx, level, msg, all...)
	return nil
}

// metadata is the "_aws" member of a line holding metrics.
func (l *Logger) metadata(now time.Time, metrics []Metric) map[string]any {
	names := make([]string, 0, len(l.dims))
	for k := range l.dims {
		names = append(names, k)
	}
	defs := make([]map[string]string, len(metrics))
	for i, m := range metrics {
		defs[i] = map[string]string{"Name": m.Name, "Unit": m.Unit}
	}
	return map[string]any{
		"Timestamp": now.UnixMilli(),
		"CloudWatchMetrics": []any{map[string]any{
			"Namespace":  Namespace,
			"Dimensions": [][]string{names},
			"Metrics":    defs,
		}},
	}
}

// Metric is one value.
type Metric struct {
	Name  string
	Value float64
	Unit  string // "Count", "Milliseconds", ...
}

// Put writes one line holding all metrics, with the Logger's dimensions.
func (l *Logger) Put(now time.Time, metrics ...Metric) error {
	if l == nil || len(metrics) == 0 {
		return nil
	}
	line := make(map[string]any, len(metrics)+len(l.dims)+1)
	for k, v := range l.dims {
		line[k] = v
	}
	for _, m := range metrics {
		line[m.Name] = m.Value
	}
	line["_aws"] = l.metadata(now, metrics)
	b, err := json.Marshal(line)
	if err != nil {
		return fmt.Errorf("encode metrics: %w", err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, err := l.out.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("write metrics: %w", err)
	}
	return nil
}
