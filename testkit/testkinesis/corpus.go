package testkinesis

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"

	"github.com/shardline/shardline/local/kinesisread"
	"github.com/shardline/shardline/testkit/testddb"
)

// Event is an event of a corpus: where it is, and the time it must be
// stored under.
type Event struct {
	Source, ID string
	At         time.Time // zero: the pipeline stamps its record's arrival
	Record     int       // the record that holds it
}

// Corpus is n events in records: most one event a record, every seventh
// record an array of three, every fifth event without a time, and last one
// record that is not JSON (quarantined). Sources take turns.
func Corpus(n int, sources ...string) ([][]byte, []Event) {
	base := time.Now().UTC().Add(-time.Hour).Truncate(time.Millisecond)
	var records [][]byte
	var want []Event
	event := func(i int) (string, Event) {
		w := Event{Source: sources[i%len(sources)], ID: fmt.Sprintf("ev-%d", i), Record: len(records)}
		if i%5 == 4 {
			return fmt.Sprintf(`{"specversion":"1.0","id":%q,"source":%q,"type":"t"}`, w.ID, w.Source), w
		}
		w.At = base.Add(time.Duration(i) * time.Millisecond)
		return fmt.Sprintf(`{"specversion":"1.0","id":%q,"source":%q,"type":"t","time":%q,"data":{"n":%d}}`,
			w.ID, w.Source, w.At.Format(time.RFC3339Nano), i), w
	}
	for i := 0; i < n; {
		if len(records)%7 == 6 && i+3 <= n {
			var parts []string
			for range 3 {
				e, w := event(i)
				parts, want, i = append(parts, e), append(want, w), i+1
			}
			records = append(records, []byte("["+strings.Join(parts, ",")+"]"))
			continue
		}
		e, w := event(i)
		records, want, i = append(records, []byte(e)), append(want, w), i+1
	}
	records = append(records, []byte("not json"))
	return records, want
}

// Arrivals reads the whole stream back and gives each record's data its
// arrival time.
func Arrivals(t testing.TB, c *kinesis.Client, arn string) map[string]time.Time {
	t.Helper()
	ctx := context.Background()
	stream, err := kinesisread.ParseARN(arn)
	if err != nil {
		t.Fatal(err)
	}
	shards, err := kinesisread.Shards(ctx, c, stream)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]time.Time{}
	for _, s := range shards {
		it, err := kinesisread.Iterator(ctx, c, stream, *s.ShardId, kinesisread.TrimHorizon)
		if err != nil {
			t.Fatal(err)
		}
		for {
			p, err := kinesisread.Read(ctx, c, stream, *s.ShardId, it, 10000)
			if err != nil {
				t.Fatal(err)
			}
			for _, rec := range p.Records {
				out[string(rec.Kinesis.Data)] = rec.Kinesis.ApproximateArrivalTimestamp.Time
			}
			if len(p.Records) == 0 {
				break
			}
			it = p.Next
		}
	}
	return out
}

// AssertStoredOnce checks the table against a corpus put on the stream:
// each event is stored once, under its own time or its record's arrival,
// nothing else is, and the one record that is not JSON is quarantined.
func AssertStoredOnce(t testing.TB, c *kinesis.Client, arn string, ddb *dynamodb.Client, table string, records [][]byte, want []Event) {
	t.Helper()
	arrived := Arrivals(t, c, arn)
	got := testddb.StoredIn(t, ddb, table)
	for _, w := range want {
		at := w.At
		if at.IsZero() {
			at = arrived[string(records[w.Record])].Round(time.Millisecond)
		}
		k := testddb.EventKey(w.Source, w.ID, at)
		if got.Events[k] != 1 {
			t.Errorf("%s stored %d times", k, got.Events[k])
		}
		delete(got.Events, k)
	}
	for k := range got.Events {
		t.Errorf("stored but not sent: %s", k)
	}
	if got.Quarantined != 1 {
		t.Errorf("%d records quarantined, want 1", got.Quarantined)
	}
}
