package emf

import (
	"bytes"
	"encoding/json"
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
	var line struct {
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
		Failed   float64
	}
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
