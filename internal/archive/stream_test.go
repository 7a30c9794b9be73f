package archive_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/shardline/shardline/internal/archive"
	"github.com/shardline/shardline/internal/ingest"
	"github.com/shardline/shardline/internal/item"
	"github.com/shardline/shardline/internal/schema"
	"github.com/shardline/shardline/local/ddbstreams"
	"github.com/shardline/shardline/testkit/testddb"
)

func TestMain(m *testing.M) { testddb.Main(m) }

var now = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

// kinesis is a Kinesis batch of the given record data.
func kinesis(data ...string) events.KinesisEvent {
	var k events.KinesisEvent
	for i, d := range data {
		k.Records = append(k.Records, events.KinesisEventRecord{EventSource: "aws:kinesis",
			EventSourceArn: "arn:aws:kinesis:us-east-1:000000000000:stream/s",
			Kinesis:        events.KinesisRecord{Data: []byte(d), SequenceNumber: fmt.Sprint(i)}})
	}
	return k
}

// TestArchiveFromTheStream runs the archive on DynamoDB Local's stream of
// what the ingest function stored: every stored event reaches the archive
// in its (source, day) partition, whatever its source holds, a late event
// in its own day; a rewrite with other content adds a MODIFY line; a
// quarantined record does not; a batch delivered twice rewrites its
// objects; and the newest line of each event is the table's item, byte for
// byte.
func TestArchiveFromTheStream(t *testing.T) {
	ctx := context.Background()
	client := testddb.Client(t, testddb.Endpoint(t))
	table := fmt.Sprintf("archive-%d", time.Now().UnixNano())
	if err := schema.Create(ctx, client, table); err != nil {
		t.Fatal(err)
	}
	h := ingest.New(ingest.DefaultConfig(table), client, ingest.Options{Now: func() time.Time { return now }})
	ev := func(src, id string, at time.Time, data string) string {
		b, _ := json.Marshal(map[string]any{"id": id, "source": src, "type": "t." + id[:1], "time": at.Format(time.RFC3339Nano),
			"data": json.RawMessage(data)})
		return string(b)
	}
	late := now.Add(-20 * 24 * time.Hour)
	batch := []string{
		ev("orders", "a1", now.Add(-time.Hour), `12345678901234567890`),
		ev("orders", "a2", now.Add(-13*time.Hour), `{"n":[1,2,3]}`),
		ev("auth #1 (eu/west)", "b1", now.Add(-time.Minute), `"<&>"`),
		ev("ü/β", "c1", now.Add(-2*time.Minute), `null`),
		ev(".hidden", "d1", late, `1.50`),
		"not an event",
	}
	for _, k := range []events.KinesisEvent{kinesis(batch...), kinesis(batch[0]), kinesis(ev("orders", "a1", now.Add(-time.Hour), `2`))} {
		if resp, err := h.Kinesis(ctx, k); err != nil || len(resp.BatchItemFailures) > 0 {
			t.Fatalf("ingest: %v %v", err, resp.BatchItemFailures)
		}
	}

	arn, err := ddbstreams.StreamARN(ctx, client, table)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := ddbstreams.Read(ctx, ddbstreams.Static(testddb.Endpoint(t)), arn)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	f := &archive.Function{Store: archive.Dir(dir)}
	for _, rs := range recs {
		for i := 0; i < len(rs); i += 4 {
			b := events.DynamoDBEvent{Records: rs[i:min(i+4, len(rs))]}
			for range 1 + 1*(i/4%2) { // every other batch is delivered twice
				if err := f.Invoke(ctx, b); err != nil {
					t.Fatal(err)
				}
			}
		}
	}

	lines := readDir(t, dir)
	var got []string
	for _, l := range lines {
		got = append(got, l.Source+" "+l.ID+" "+l.Change)
	}
	sort.Strings(got)
	want := []string{".hidden d1 INSERT", "auth #1 (eu/west) b1 INSERT", "orders a1 INSERT", "orders a1 MODIFY", "orders a2 INSERT", "ü/β c1 INSERT"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("archived %q, want %q", got, want)
	}
	for _, l := range lines {
		tm, _ := time.Parse(time.RFC3339Nano, l.Time)
		if want := archive.ObjectKey(l.Source, tm, "x"); !strings.HasPrefix(l.path, strings.TrimSuffix(want, "x.json.gz")) {
			t.Errorf("%s %s in %s, want it under %s", l.Source, l.ID, l.path, want)
		}
	}
	if n := len(partitions(lines, late)); n != 1 {
		t.Errorf("the late event is in %d partitions of its own day", n)
	}
	checkNewestIsTheTable(t, client, table, lines)
}

type line struct {
	archive.Line
	path string
}

// readDir decodes every object under dir.
func readDir(t *testing.T, dir string) []line {
	t.Helper()
	var out []line
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if !strings.HasSuffix(path, ".json.gz") {
			return fmt.Errorf("stray file %s", path)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		zr, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		for dec := json.NewDecoder(zr); dec.More(); {
			var l archive.Line
			if err := dec.Decode(&l); err != nil {
				return err
			}
			out = append(out, line{l, filepath.ToSlash(rel)})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func partitions(lines []line, day time.Time) map[string]bool {
	out := map[string]bool{}
	for _, l := range lines {
		if strings.Contains(l.path, "/day="+day.Format(archive.DayLayout)+"/") {
			out[filepath.Dir(l.path)] = true
		}
	}
	return out
}

// checkNewestIsTheTable: the line with the largest sequence number of each
// event, as an Athena query that removes duplicates picks it, holds the
// table's event exactly.
func checkNewestIsTheTable(t *testing.T, c *dynamodb.Client, table string, lines []line) {
	t.Helper()
	newest := map[string]archive.Line{}
	for _, l := range lines {
		k := l.Source + "\x00" + l.ID + "\x00" + l.Time
		if n, ok := newest[k]; !ok || len(l.Seq) > len(n.Seq) || len(l.Seq) == len(n.Seq) && l.Seq > n.Seq {
			newest[k] = l.Line
		}
	}
	stored := 0
	for _, it := range testddb.Scan(t, c, table) {
		pk := it[schema.PK].(*types.AttributeValueMemberS).Value
		if !strings.HasPrefix(pk, "E#") {
			continue
		}
		stored++
		ev := it[schema.Event].(*types.AttributeValueMemberS).Value
		var e struct{ Source, ID, Time string }
		json.Unmarshal([]byte(ev), &e)
		tm, _ := time.Parse(time.RFC3339Nano, e.Time)
		l, ok := newest[e.Source+"\x00"+e.ID+"\x00"+tm.UTC().Format(time.RFC3339Nano)]
		if !ok || l.Event != ev {
			t.Errorf("table holds %s, archive's newest line %q", ev, l.Event)
		}
	}
	if stored != len(newest) {
		t.Errorf("%d events stored, %d archived", stored, len(newest))
	}
}

// putCounter is the archive directory, counting the objects put in it.
type putCounter struct {
	archive.Dir
	mu   sync.Mutex
	puts int
}

func (p *putCounter) Put(ctx context.Context, key string, body []byte) error {
	p.mu.Lock()
	p.puts++
	p.mu.Unlock()
	return p.Dir.Put(ctx, key, body)
}

// mappingBatches cuts a stream shard's records as the stack's archive
// mapping does once they are there: the event changes its filter passes,
// at most batchSize records or payload bytes of them per invocation.
func mappingBatches(t *testing.T, recs []events.DynamoDBEventRecord, batchSize, payload int) [][]events.DynamoDBEventRecord {
	t.Helper()
	var out [][]events.DynamoDBEventRecord
	var cur []events.DynamoDBEventRecord
	size := 0
	for _, r := range recs {
		if !item.IsEventChange(r, "INSERT", "MODIFY") {
			continue
		}
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		if len(cur) == batchSize || size+len(b) > payload {
			out, cur, size = append(out, cur), nil, 0
		}
		cur, size = append(cur, r), size+len(b)
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

// deliver gives h a Kinesis batch as the event source mapping does: again
// from the first record it reports, until it reports none. A batch of 500
// new sources spends its first-of-day setup's share of the invocation's
// time, and on a busy machine may not finish it in one delivery; the next
// resumes where it stopped (ingest's setUp), so the machine's speed
// changes how many deliveries it takes, never what is stored.
func deliver(t *testing.T, h *ingest.Handler, k events.KinesisEvent) {
	t.Helper()
	for attempt := 1; len(k.Records) > 0; attempt++ {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		resp, err := h.Kinesis(ctx, k)
		cancel()
		if err != nil {
			t.Fatalf("ingest: %v", err)
		}
		if len(resp.BatchItemFailures) == 0 {
			return
		}
		if attempt == 100 {
			t.Fatalf("ingest: %d records still failed after %d deliveries", len(resp.BatchItemFailures), attempt)
		}
		first := len(k.Records)
		for _, f := range resp.BatchItemFailures {
			for i, r := range k.Records {
				if r.Kinesis.SequenceNumber == f.ItemIdentifier {
					first = min(first, i)
				}
			}
		}
		k.Records = k.Records[first:]
	}
}

// TestQuietSourcesShareObjects: 3,200 quiet sources, one event each,
// stored by the ingest function on DynamoDB Local and delivered from its
// stream in batches as the mapping cuts them (10,000 records or 6 MB):
// the archive puts at most one object per bucket and day of a batch, at
// most one PUT per 100 events, however many sources the batch holds; and
// every event is archived once, in its source's bucket, as the table holds
// it. 3,200 is the fewest with which both bounds bind: one object per
// bucket is 32 PUTs, one per 100 events is 32 too. (5,000 cost 50 CPU-s,
// nearly all DynamoDB Local's first-of-day setup of each source, for no
// check that 3,200 does not make.)
func TestQuietSourcesShareObjects(t *testing.T) {
	const sources = 3200
	ctx := context.Background()
	client := testddb.Client(t, testddb.Endpoint(t))
	table := testddb.StreamTable(t)
	h := ingest.New(ingest.DefaultConfig(table), client, ingest.Options{Now: func() time.Time { return now }})
	var k events.KinesisEvent
	for i := range sources {
		src := fmt.Sprintf("quiet/%05d", i)
		if i%500 == 0 {
			src = fmt.Sprintf("quiet #%d (ü/β)", i)
		}
		b, _ := json.Marshal(map[string]any{"id": fmt.Sprint("e", i), "source": src, "type": "t.reading",
			"time": now.Add(-time.Duration(i) * time.Second).Format(time.RFC3339), "data": map[string]int{"n": i}})
		k.Records = append(k.Records, events.KinesisEventRecord{EventSource: "aws:kinesis",
			EventSourceArn: "arn:aws:kinesis:us-east-1:000000000000:stream/s",
			Kinesis:        events.KinesisRecord{Data: b, SequenceNumber: fmt.Sprint(i)}})
		if len(k.Records) == 500 || i == sources-1 {
			deliver(t, h, k)
			k.Records = nil
		}
	}

	arn, err := ddbstreams.StreamARN(ctx, client, table)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := ddbstreams.Read(ctx, ddbstreams.Static(testddb.Endpoint(t)), arn)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	store := &putCounter{Dir: archive.Dir(dir)}
	f := &archive.Function{Store: store}
	delivered, batches := 0, 0
	for _, rs := range recs {
		for _, b := range mappingBatches(t, rs, 10000, 6<<20) {
			if err := f.Invoke(ctx, events.DynamoDBEvent{Records: b}); err != nil {
				t.Fatal(err)
			}
			delivered += len(b)
			batches++
		}
	}
	if delivered != sources {
		t.Fatalf("the stream delivered %d event changes, want %d", delivered, sources)
	}
	if store.puts > batches*archive.Buckets || store.puts*100 > delivered {
		t.Errorf("%d PUTs for %d events in %d batches: want at most %d a batch (one per bucket) and one per 100 events",
			store.puts, delivered, batches, archive.Buckets)
	}
	t.Logf("%d events from %d sources in %d batches: %d PUTs", delivered, sources, batches, store.puts)

	lines := readDir(t, dir)
	seen := map[string]int{}
	for _, l := range lines {
		seen[l.Source]++
		tm, _ := time.Parse(time.RFC3339Nano, l.Time)
		if want := archive.ObjectKey(l.Source, tm, "x"); !strings.HasPrefix(l.path, strings.TrimSuffix(want, "x.json.gz")) {
			t.Errorf("%s %s in %s, want it under %s", l.Source, l.ID, l.path, want)
		}
	}
	if len(seen) != sources || len(lines) != sources {
		t.Errorf("%d lines of %d sources archived, want one of each of %d", len(lines), len(seen), sources)
	}
	checkNewestIsTheTable(t, client, table, lines)
}
