package redrive

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/shardline/shardline/internal/archive"
	"github.com/shardline/shardline/internal/counts"
	"github.com/shardline/shardline/internal/ingest"
	"github.com/shardline/shardline/internal/item"
	"github.com/shardline/shardline/local/ddbstreams"
	"github.com/shardline/shardline/ops/onfailure"
	"github.com/shardline/shardline/ops/sourcecounter"
	"github.com/shardline/shardline/testkit/faultproxy"
	"github.com/shardline/shardline/testkit/testddb"
	"github.com/shardline/shardline/testkit/tests3"
)

// failingStore refuses the objects of one source's bucket while doomed is
// set: the local archive directory cannot be told to fail, so a wrapper
// stands in for S3 refusing the puts. ("doomed" and "fine" are in buckets
// of their own.)
type failingStore struct {
	archive.Store
	doomed atomic.Bool
}

func (f *failingStore) Put(ctx context.Context, key string, body []byte) error {
	if f.doomed.Load() && strings.Contains(key, "/bucket="+archive.BucketPartition(archive.Bucket("doomed"))+"/") {
		return fmt.Errorf("put %s: access denied", key)
	}
	return f.Store.Put(ctx, key, body)
}

// TestRedriveTableStream is the table stream's path end to end, for both
// of its consumers. The local pollers run the counter and the archive as
// the stack's mappings do (bounded retries, bisection, an S3 on-failure
// destination). A first wave is counted, so that the stream shard's chain
// has links; then, for a second wave, the counter's link puts fail, and
// the archive's puts of one source; the batches are given up and land in
// the local S3 with their records. The fault ends and a third wave is
// counted, which extends the chain past the given-up records. A redrive
// then counts (into a chain of its own, read after the fold) and archives
// every given-up event, and the same objects redriven again change
// nothing.
func TestRedriveTableStream(t *testing.T) {
	ctx := context.Background()
	table, bucket, dir := testddb.StreamTable(t), tests3.Bucket(t), t.TempDir()
	client := testddb.Client(t, testddb.Endpoint(t))
	if archive.Bucket("doomed") == archive.Bucket("fine") {
		t.Fatal("doomed and fine share a bucket: the archive's fault would fail both")
	}
	h := ingest.New(ingest.DefaultConfig(table), client, ingest.Options{})
	hour := time.Now().UTC().Truncate(time.Hour).Add(-time.Hour)
	wave := func(from int) {
		var k events.KinesisEvent
		for i := from; i < from+20; i++ {
			src := "fine"
			if i%7 == 0 {
				src = "doomed" // 0, 7, 14 in the first wave, 21, 28, 35 in the second
			}
			data, _ := json.Marshal(map[string]string{"id": fmt.Sprint(i), "source": src, "type": "t", "time": hour.Add(time.Duration(i) * 30 * time.Second).Format(time.RFC3339)})
			k.Records = append(k.Records, events.KinesisEventRecord{EventSourceArn: "arn:aws:kinesis:us-east-1:000000000000:stream/s",
				Kinesis: events.KinesisRecord{Data: data, SequenceNumber: fmt.Sprint(i)}})
		}
		if resp, err := h.Kinesis(ctx, k); err != nil || len(resp.BatchItemFailures) > 0 {
			t.Fatalf("ingest: %v, %v", err, resp.BatchItemFailures)
		}
	}

	proxy := faultproxy.For(t, testddb.Endpoint(t))
	linksFail := func(r faultproxy.Request) (*faultproxy.Fault, faultproxy.Hold) {
		if r.Op == "PutItem" && bytes.Contains(r.Body, []byte(`C##L0#`)) {
			return &faultproxy.Fault{Status: 400, Code: "ValidationException"}, nil
		}
		return nil, nil
	}
	store := &failingStore{Store: archive.Dir(dir)}
	counter := counts.New(counts.Config{Table: table, Retention: 30 * 24 * time.Hour}, testddb.Client(t, proxy.URL), counts.Options{})
	arch := &archive.Function{Store: store}
	arn, err := ddbstreams.StreamARN(ctx, client, table)
	if err != nil {
		t.Fatal(err)
	}
	poller := func(fn, mapping string, handler ddbstreams.Handler, kinds ...string) *ddbstreams.Poller {
		return &ddbstreams.Poller{Client: ddbstreams.Static(testddb.Endpoint(t)), StreamARN: arn, Window: 50 * time.Millisecond, Idle: 20 * time.Millisecond,
			BatchSize: 100, Handler: handler,
			Filter: func(r events.DynamoDBEventRecord) bool { return item.IsEventChange(r, kinds...) },
			Retry: &ddbstreams.Retry{RetryAttempts: 1, Bisect: true, FunctionARN: "arn:aws:lambda:us-east-1:000000000000:function:" + fn,
				OnFailure: onfailure.S3{Client: tests3.Client(t), Bucket: bucket, MappingUUID: mapping}.Put}}
	}
	cp := poller("counter-fn", "counter-mapping", func(ctx context.Context, ev events.DynamoDBTimeWindowEvent) error {
		_, err := counter.Invoke(ctx, ev)
		return err
	}, "INSERT")
	ap := poller("archive-fn", "archive-mapping", func(ctx context.Context, ev events.DynamoDBTimeWindowEvent) error {
		return arch.Invoke(ctx, events.DynamoDBEvent{Records: ev.Records})
	}, "INSERT", "MODIFY")
	stops := []func(){run(t, cp.Run), run(t, ap.Run)}

	wave(40) // counted and archived: the chain has links
	waitFor(t, "the first events processed", func() bool { return cp.Processed() == 20 && ap.Processed() == 20 })
	if cp.GivenUp() != 0 || ap.GivenUp() != 0 {
		t.Fatalf("the first wave was given up: counter %d, archive %d", cp.GivenUp(), ap.GivenUp())
	}
	proxy.SetRule(linksFail)
	store.doomed.Store(true)
	wave(0)
	waitFor(t, "the second wave processed", func() bool { return cp.Processed() == 40 && ap.Processed() == 40 })
	if cp.GivenUp() == 0 || ap.GivenUp() == 0 || cp.Delivered() == 0 || ap.Delivered() == 0 {
		t.Fatalf("given up: counter %d records in %d objects, archive %d in %d", cp.GivenUp(), cp.Delivered(), ap.GivenUp(), ap.Delivered())
	}
	proxy.SetRule(nil)
	store.doomed.Store(false)
	wave(20)
	waitFor(t, "the next events processed", func() bool { return cp.Processed() == 60 && ap.Processed() == 60 })
	for _, stop := range stops {
		stop()
	}
	count := func(source string) int64 {
		q := url.Values{"source": {source}, "from": {hour.Format(time.RFC3339)}, "to": {hour.Add(time.Hour).Format(time.RFC3339)}, "interval": {"1h"}}
		req, err := counts.ParseRequest(q.Encode(), time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := (&counts.LSM{Client: client, Table: table}).Fold(ctx); err != nil { // as the scheduled fold does
			t.Fatal(err)
		}
		resp, err := counts.ReadLevels(ctx, client, table, 0, req)
		if err != nil {
			t.Fatal(err)
		}
		var n int64
		for _, s := range resp.Series {
			for _, p := range s.Points {
				n += p.Count
			}
		}
		return n
	}
	// The second wave (0–19) is counted by none; the archive lacks its
	// doomed events (0, 7, 14).
	if count("doomed") != 6 || count("fine") != 34 || len(archived(t, dir)) != 57 {
		t.Fatalf("before the redrive: doomed counted %d, fine %d, %d events archived", count("doomed"), count("fine"), len(archived(t, dir)))
	}

	objects := int(cp.Delivered() + ap.Delivered())
	saved := snapshot(t, bucket)
	r := &Redriver{S3: tests3.Client(t), Bucket: bucket, Mappings: map[string]Consumer{"counter-mapping": Counter, "archive-mapping": Archive},
		Chain:   &counts.Chain{Client: client, Table: table, Retention: 30 * 24 * time.Hour},
		Counter: &sourcecounter.Counter{Client: client, Table: table, Retention: 30 * 24 * time.Hour}, Archive: &archive.Function{Store: archive.Dir(dir)}}
	var byConsumer = map[Consumer]int{}
	sum, err := r.Run(ctx, Options{OnObject: func(res Result) { byConsumer[res.Consumer]++ }})
	if err != nil || sum.Redriven != objects || sum.NeedsAttention() || byConsumer[Counter] != int(cp.Delivered()) || byConsumer[Archive] != int(ap.Delivered()) {
		t.Fatalf("redrive: %+v, %v, %v", sum, err, byConsumer)
	}
	after := files(t, dir)
	if count("doomed") != 9 || count("fine") != 51 || len(archived(t, dir)) != 60 || len(tests3.Keys(t, bucket)) != 0 {
		t.Fatalf("after the redrive: doomed counted %d, fine %d, %d events archived, %d objects left",
			count("doomed"), count("fine"), len(archived(t, dir)), len(tests3.Keys(t, bucket)))
	}

	restore(t, bucket, saved) // as if the deletes were lost
	if sum, err = r.Run(ctx, Options{}); err != nil || sum.Redriven != objects {
		t.Fatalf("redrive again: %+v, %v", sum, err)
	}
	if count("doomed") != 9 || count("fine") != 51 || fmt.Sprint(files(t, dir)) != fmt.Sprint(after) {
		t.Fatalf("redriving again changed the counts (%d, %d) or the archive", count("doomed"), count("fine"))
	}
}

// files is every archive object under dir, by path.
func files(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			b, _ := os.ReadFile(path)
			out[path] = string(b)
		}
		return err
	})
	return out
}

// archived is the set of events (source and id) the archive under dir
// holds.
func archived(t *testing.T, dir string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for path, body := range files(t, dir) {
		zr, err := gzip.NewReader(strings.NewReader(body))
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		for dec := json.NewDecoder(zr); dec.More(); {
			var l archive.Line
			if err := dec.Decode(&l); err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			out[l.Source+"/"+l.ID] = true
		}
	}
	return out
}
