package emf

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"testing"
	"time"
)

func TestPutWritesOneEMFLine(t *testing.T) {
	var buf bytes.Buffer
	l := New(&buf, map[string]string{"Function": "ingest"})
	now := time.UnixMilli(1_700_000_000_123)
	if err := l.Put(now, Metric{"Accepted", 3, "Count"}, Metric{"Failed", 0, "Count"}); err != nil {
		t.Fatal(err)
	}
	var line emfLine
	if bytes.Count(buf.Bytes(), []byte("\n")) != 1 {
		t.Fatalf("want one line, got %q", buf.String())
	}
	if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
		t.Fatal(err)
	}
	m := line.AWS.CloudWatchMetrics
	if line.AWS.Timestamp != now.UnixMilli() || len(m) != 1 || m[0].Namespace != Namespace ||
		len(m[0].Dimensions) != 1 || m[0].Dimensions[0][0] != "Function" || len(m[0].Metrics) != 2 ||
		m[0].Metrics[0].Name != "Accepted" || line.Function != "ingest" || line.Accepted != 3 {
		t.Fatalf("bad EMF line: %s", buf.String())
	}
}

// emfLine is the part of an EMF document the tests read.
type emfLine struct {
	AWS struct {
		Timestamp         int64
		CloudWatchMetrics []struct {
			Namespace  string
			Dimensions [][]string
			Metrics    []struct{ Name, Unit string }
		}
	} `json:"_aws"`
	Function string
	Accepted float64
	Msg      string `json:"msg"`
	Source   string `json:"source"`
}

// TestLogWritesOneLine: a Logger made by NewInLog writes an invocation's
// log record and its metrics as one JSON line that is an EMF document; a
// plain one, or a log level that drops the record, writes the metrics on a
// line of their own.
func TestLogWritesOneLine(t *testing.T) {
	now := time.UnixMilli(1_700_000_000_123)
	attrs := []slog.Attr{slog.String("source", "kinesis"), slog.Int("accepted", 3)}
	ms := []Metric{{"Accepted", 3, "Count"}, {"Failed", 0, "Count"}}
	for _, c := range []struct {
		name          string
		inLog         bool
		level         slog.Level // the log's
		logs, metrics int        // lines written to each
	}{
		{"in the log", true, slog.LevelInfo, 1, 0},
		{"apart", false, slog.LevelInfo, 1, 1},
		{"log level above the record", true, slog.LevelWarn, 0, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			var logs, metrics bytes.Buffer
			log := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: c.level}))
			l := New(&metrics, map[string]string{"Function": "ingest"})
			if c.inLog {
				l = NewInLog(&metrics, map[string]string{"Function": "ingest"})
			}
			if err := l.Log(context.Background(), log, slog.LevelInfo, "ingest", now, attrs, ms...); err != nil {
				t.Fatal(err)
			}
			if n := bytes.Count(logs.Bytes(), []byte("\n")); n != c.logs {
				t.Fatalf("%d log lines, want %d: %q", n, c.logs, logs.String())
			}
			if n := bytes.Count(metrics.Bytes(), []byte("\n")); n != c.metrics {
				t.Fatalf("%d metric lines, want %d: %q", n, c.metrics, metrics.String())
			}
			emf := metrics.Bytes()
			if c.metrics == 0 {
				emf = logs.Bytes()
			}
			var line emfLine
			if err := json.Unmarshal(emf, &line); err != nil {
				t.Fatal(err)
			}
			m := line.AWS.CloudWatchMetrics
			if line.AWS.Timestamp != now.UnixMilli() || len(m) != 1 || m[0].Namespace != Namespace ||
				len(m[0].Dimensions) != 1 || m[0].Dimensions[0][0] != "Function" || len(m[0].Metrics) != 2 ||
				line.Function != "ingest" || line.Accepted != 3 {
				t.Fatalf("not an EMF document: %s", emf)
			}
			if c.metrics == 0 && (line.Msg != "ingest" || line.Source != "kinesis") {
				t.Fatalf("the log record's fields are missing: %s", emf)
			}
		})
	}
	// A nil Logger only logs.
	var logs bytes.Buffer
	var none *Logger
	if err := none.Log(context.Background(), slog.New(slog.NewJSONHandler(&logs, nil)), slog.LevelInfo, "ingest", now, attrs, ms...); err != nil || bytes.Count(logs.Bytes(), []byte("\n")) != 1 {
		t.Fatalf("nil Logger: %v, %q", err, logs.String())
	}
}
