package benchrun

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"
)

// TestProducerBench: the producer section puts every event each way and
// counts what it cost: one request per event for PutRecord, one per 500
// events for PutRecords (at least ten events a request, however slow the
// machine), far fewer records with aggregation.
func TestProducerBench(t *testing.T) {
	rows, err := measureProducer(context.Background(), io.Discard, ProducerOptions{Events: 1200, PutRecords: 100, Shards: 2}, time.Now().UTC())
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 3 || rows[0].Events != 100 || rows[0].Requests != 1000 || rows[0].Records != 1000 || rows[0].PutUnits != 1000 {
		t.Fatalf("PutRecord row %+v", rows[0])
	}
	if r := rows[1]; r.Events != 1200 || r.Records != 1000 || r.Requests < 2.5 || r.Requests > 100 {
		t.Fatalf("PutRecords row %+v", r)
	}
	// Requests per 1,000 events depend on the machine's speed (a batch
	// goes when full or when it has lingered 50 ms): bounded as PutRecords'
	// are, not compared with them.
	if r := rows[2]; r.Events != 1200 || r.Records > 30 || r.PutUnits > 3*r.Records || r.Requests > 100 {
		t.Fatalf("aggregated row %+v", r)
	}
	var b strings.Builder
	producerMarkdown(&b, rows, 2)
	if !strings.Contains(b.String(), "| pkg/producer, KPL aggregation | 1200 |") {
		t.Fatalf("markdown:\n%s", b.String())
	}
}
