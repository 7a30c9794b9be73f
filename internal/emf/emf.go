// Package emf writes CloudWatch metrics as Embedded Metric Format log lines:
// CloudWatch Logs turns them into metrics, with no API call from the function.
package emf

import (
	"encoding/json"
	"fmt"
	"io"
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
}

// New returns a Logger writing to out with the given dimensions.
func New(out io.Writer, dims map[string]string) *Logger {
	return &Logger{out: out, dims: dims}
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
	names := make([]string, 0, len(l.dims))
	line := make(map[string]any, len(metrics)+len(l.dims)+1)
	for k, v := range l.dims {
		names = append(names, k)
		line[k] = v
	}
	defs := make([]map[string]string, len(metrics))
	for i, m := range metrics {
		defs[i] = map[string]string{"Name": m.Name, "Unit": m.Unit}
		line[m.Name] = m.Value
	}
	line["_aws"] = map[string]any{
		"Timestamp": now.UnixMilli(),
		"CloudWatchMetrics": []any{map[string]any{
			"Namespace":  Namespace,
			"Dimensions": [][]string{names},
			"Metrics":    defs,
		}},
	}
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
