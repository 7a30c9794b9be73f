package archive

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

// memStore keeps objects in memory and counts puts in flight: a fake for
// the function's logic (the engine-backed test is stream_test.go).
type memStore struct {
	mu       sync.Mutex
	objects  map[string][]byte
	fail     func(key string) error
	inFlight atomic.Int32
	peak     atomic.Int32
}

func (m *memStore) Put(_ context.Context, key string, body []byte) error {
	n := m.inFlight.Add(1)
	defer m.inFlight.Add(-1)
	for p := m.peak.Load(); n > p && !m.peak.CompareAndSwap(p, n); p = m.peak.Load() {
	}
	time.Sleep(time.Millisecond)
	if m.fail != nil {
		if err := m.fail(key); err != nil {
			return err
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.objects == nil {
		m.objects = map[string][]byte{}
	}
	m.objects[key] = body
	return nil
}

// readLines decodes an object's gzip JSON lines.
func readLines(t *testing.T, body []byte) []Line {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	var out []Line
	dec := json.NewDecoder(zr)
	for dec.More() {
		var l Line
		if err := dec.Decode(&l); err != nil {
			t.Fatal(err)
		}
		out = append(out, l)
	}
	return out
}

func attr(s string) events.DynamoDBAttributeValue { return events.NewStringAttribute(s) }

// record is a stream record of an event item as the ingest function writes
// it (pk, sk, ev, type), or of any other key when pk says so.
func record(name, pk, sk, ev string, seq int) events.DynamoDBEventRecord {
	img := map[string]events.DynamoDBAttributeValue{"pk": attr(pk), "sk": attr(sk), "type": attr("t.created")}
	if ev != "" {
		img["ev"] = attr(ev)
	}
	r := events.DynamoDBEventRecord{EventName: name, EventID: "id" + strings.Repeat("0", seq%3) + string(rune('a'+seq%26))}
	r.Change.Keys = map[string]events.DynamoDBAttributeValue{"pk": attr(pk), "sk": attr(sk)}
	r.Change.NewImage = img
	r.Change.SequenceNumber = "1000" + string(rune('0'+seq%10))
	r.Change.ApproximateCreationDateTime = events.SecondsEpochTime{Time: time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)}
	return r
}

// TestBucket pins the bucket function and the key layout: a source's
// bucket is the CRC-32 of its UTF-8 bytes mod 32, which Athena, the CLI
// and docs/archive.md compute too; a change here would scatter every
// source away from its archived days, so these values must never move.
func TestBucket(t *testing.T) {
	if Buckets != 32 {
		t.Fatalf("Buckets = %d: the layout v2 has 32, and changing it moves every source", Buckets)
	}
	for src, want := range map[string]int{
		"orders": 14, "Orders": 24, "a/b": 28, "plant/line-1": 16, "fleet/hot": 13, "device/00000": 19, "device/00001": 5,
		"auth #1 (eu/west)": 12, "ü/β": 9, "": 0,
	} {
		if got := Bucket(src); got != want {
			t.Errorf("Bucket(%q) = %d, want %d", src, got, want)
		}
	}
	for b, want := range map[int]string{0: "00", 5: "05", 17: "17", 31: "31"} {
		if got := BucketPartition(b); got != want {
			t.Errorf("BucketPartition(%d) = %q, want %q", b, got, want)
		}
	}
	used := map[int]int{}
	for i := range 3200 {
		b := Bucket(fmt.Sprintf("device/%05d", i))
		if b < 0 || b >= Buckets {
			t.Fatalf("bucket %d out of range", b)
		}
		used[b]++
	}
	for b := range Buckets {
		if n := used[b]; n < 50 || n > 150 { // 100 expected: spread, not exact
			t.Errorf("bucket %d holds %d of 3,200 sources", b, n)
		}
	}
	day := time.Date(2026, 11, 22, 23, 59, 59, 0, time.UTC)
	if got, want := ObjectKey("a/b", day, "4f1c-77"), "events/v2/bucket=28/day=2026-11-22/4f1c-77.json.gz"; got != want {
		t.Errorf("ObjectKey = %q, want %q", got, want)
	}
	if got, want := ObjectKey("orders", day.Add(time.Second), "x/y"), "events/v2/bucket=14/day=2026-11-23/.782f79.json.gz"; got != want {
		t.Errorf("ObjectKey = %q, want %q", got, want)
	}
}

// TestSourcePartition: the layout v1's src partition, which the events_v1
// table still reads: plain sources name their partition as they are;
// every other source, however spelled, gets one path segment of its own
// that no other source shares.
func TestSourcePartition(t *testing.T) {
	for src, want := range map[string]string{
		"my-service": "my-service", "orders.v2": "orders.v2", "A_b-9": "A_b-9",
		".hidden": ".2e68696464656e", "a/b": ".612f62", "a b": ".612062", "ü": ".c3bc", "%": ".25",
		"auth #1 (eu/west)": ".61757468202331202865752f7765737429",
	} {
		if got := SourcePartition(src); got != want {
			t.Errorf("SourcePartition(%q) = %q, want %q", src, got, want)
		}
	}
	seen := map[string]string{}
	for _, src := range []string{"a", ".61", "61", "a/b", "a%2Fb", "a#b", "A", "..", ".", "a.", "\x00", "src=x/day=y"} {
		p := SourcePartition(src)
		if strings.ContainsAny(p, "/=%# ") || p == "." || p == ".." {
			t.Errorf("SourcePartition(%q) = %q is not one safe path segment", src, p)
		}
		if other, ok := seen[p]; ok {
			t.Errorf("%q and %q share partition %q", src, other, p)
		}
		seen[p] = src
	}
}

// TestArchiveSkipsWhatIsNotAnEvent: removals, quarantine, shard records,
// counters and the catalogue are skipped; events inserted or rewritten are
// archived, grouped by bucket and day, in stream order.
func TestArchiveSkipsWhatIsNotAnEvent(t *testing.T) {
	const sk1, sk2 = "2026-11-22T11:45:10.000000000Z#e1", "2026-11-21T08:00:00.500000000Z#e2"
	recs := []events.DynamoDBEventRecord{
		record("INSERT", "E#orders#2026-11-22#3", sk1, `{"id":"e1","data":12345678901234567890}`, 1),
		record("REMOVE", "E#orders#2026-11-22#3", sk1, "", 2),
		record("INSERT", "Q#2026-11-22#1", "2026-11-22T11:45:10Z#k:x", "", 3),
		record("INSERT", "M#E#orders#2026-11-22", "shards", "", 4),
		record("MODIFY", "C#orders", "2026-11-22T11", "", 5),
		record("INSERT", "S#2026-11-22", "orders", "", 6),
		record("INSERT", "E#orders#2026-11-21#0", sk2, `{"id":"e2"}`, 7),
		record("MODIFY", "E#orders#2026-11-22#3", sk1, `{"id":"e1","data":2}`, 8),
	}
	s := &memStore{}
	f := &Function{Store: s}
	st, err := f.Archive(context.Background(), recs)
	if err != nil {
		t.Fatal(err)
	}
	if st != (Stats{Records: 8, Archived: 3, Skipped: 5, Objects: 2, Bytes: st.Bytes}) || st.Bytes == 0 {
		t.Errorf("stats %+v", st)
	}
	batch := recs[0].EventID
	day22 := readLines(t, s.objects["events/v2/bucket=14/day=2026-11-22/"+batch+".json.gz"])
	day21 := readLines(t, s.objects["events/v2/bucket=14/day=2026-11-21/"+batch+".json.gz"])
	if len(day22) != 2 || len(day21) != 1 {
		t.Fatalf("objects %v", keys(s.objects))
	}
	want := Line{Source: "orders", ID: "e1", Time: "2026-11-22T11:45:10Z", Type: "t.created", Change: "INSERT",
		StoredAt: "2026-11-22T12:00:00Z", Seq: recs[0].Change.SequenceNumber, Event: `{"id":"e1","data":12345678901234567890}`}
	if day22[0] != want {
		t.Errorf("line %+v, want %+v", day22[0], want)
	}
	if day22[1].Change != "MODIFY" || day22[1].Event != `{"id":"e1","data":2}` {
		t.Errorf("rewritten event %+v", day22[1])
	}
	if day21[0].Time != "2026-11-21T08:00:00.5Z" {
		t.Errorf("time %q", day21[0].Time)
	}
}

// TestUnreadableEventFailsTheBatch: an event item without its event, or
// with a key that does not parse, fails the batch (to be delivered again)
// rather than leave the archive without it.
func TestUnreadableEventFailsTheBatch(t *testing.T) {
	for _, r := range []events.DynamoDBEventRecord{
		record("INSERT", "E#orders#2026-11-22#3", "2026-11-22T11:45:10.000000000Z#e1", "", 1),
		record("INSERT", "E#orders", "2026-11-22T11:45:10.000000000Z#e1", "{}", 1),
		record("INSERT", "E#orders#2026-11-22#3", "yesterday#e1", "{}", 1),
	} {
		s := &memStore{}
		if _, err := (&Function{Store: s}).Archive(context.Background(), []events.DynamoDBEventRecord{r}); err == nil || len(s.objects) != 0 {
			t.Errorf("%v: err %v, %d objects", r.Change.Keys, err, len(s.objects))
		}
	}
}

// TestFailedPutFailsTheBatch: one object that cannot be written fails the
// invocation, naming it; the others are still written, and the batch
// delivered again rewrites the same keys.
func TestFailedPutFailsTheBatch(t *testing.T) {
	var recs []events.DynamoDBEventRecord
	for i, src := range []string{"a", "b", "c", "d"} { // buckets 03, 25, 15, 12
		recs = append(recs, record("INSERT", "E#"+src+"#2026-11-22#0", "2026-11-22T11:45:10.000000000Z#e", `{}`, i))
	}
	down := errors.New("service unavailable")
	s := &memStore{fail: func(k string) error {
		if strings.Contains(k, "/bucket=15/") {
			return down
		}
		return nil
	}}
	f := &Function{Store: s}
	err := f.Invoke(context.Background(), events.DynamoDBEvent{Records: recs})
	if !errors.Is(err, down) || !strings.Contains(err.Error(), "/bucket=15/") || len(s.objects) != 3 {
		t.Fatalf("err %v, objects %v", err, keys(s.objects))
	}
	first := keys(s.objects)
	s.fail = nil
	if err := f.Invoke(context.Background(), events.DynamoDBEvent{Records: recs}); err != nil {
		t.Fatal(err)
	}
	if len(s.objects) != 4 {
		t.Errorf("after the retry: %v", keys(s.objects))
	}
	for _, k := range first {
		if _, ok := s.objects[k]; !ok {
			t.Errorf("the retry wrote other keys than %s", k)
		}
	}
}

// TestPutsAreBounded: a batch of 200 days (a backfill of late events)
// puts at most Concurrency objects at once.
func TestPutsAreBounded(t *testing.T) {
	var recs []events.DynamoDBEventRecord
	for i := range 200 {
		day := time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC).AddDate(0, 0, -i).Format(DayLayout)
		recs = append(recs, record("INSERT", "E#s#"+day+"#0", day+"T11:45:10.000000000Z#e", `{}`, i))
	}
	s := &memStore{}
	st, err := (&Function{Store: s, Concurrency: 4}).Archive(context.Background(), recs)
	if err != nil || st.Objects != 200 {
		t.Fatalf("%+v %v", st, err)
	}
	if p := s.peak.Load(); p > 4 || p < 2 {
		t.Errorf("peak %d puts in flight, want at most 4 (and some overlap)", p)
	}
}

func TestConfigFromEnv(t *testing.T) {
	c, err := ConfigFromEnv(envMap{EnvBucket: " b ", EnvLogLevel: "DEBUG"}.get)
	if err != nil || c.Bucket != "b" || c.LogLevel.String() != "DEBUG" {
		t.Errorf("%+v %v", c, err)
	}
	for _, env := range []envMap{{}, {EnvBucket: "b", EnvLogLevel: "loud"}} {
		_, err := ConfigFromEnv(env.get)
		if err == nil {
			t.Errorf("%v accepted", env)
		}
	}
	if _, err := ConfigFromEnv(envMap{}.get); err == nil || !strings.Contains(err.Error(), EnvBucket) {
		t.Errorf("missing bucket: %v", err)
	}
}

type envMap map[string]string

func (m envMap) get(k string) string { return m[k] }

func keys(m map[string][]byte) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
