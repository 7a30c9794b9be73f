package producer_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/shardline/shardline/pkg/producer"
	"github.com/shardline/shardline/testkit/testkinesis"
)

// TestKinesisLongIDs: an event whose id is longer than a partition key may
// be (256 characters, as Kinesis counts them: UTF-16 code units) does not
// fail its batch: its key is a hash of the id, and every event of the
// batch is stored. Issue 20 reproduced the old behaviour on kinesalite:
// one such id, and Kinesis refused the whole PutRecords request (stored 0,
// failed 100).
func TestKinesisLongIDs(t *testing.T) {
	arn, name := stream(t, 2)
	out := newOutcomes()
	rec := &recorder{KinesisAPI: client(testkinesis.Endpoint(t))}
	p := producer.NewKinesis(rec, name, producer.WithLinger(time.Hour), producer.WithOnResult(out.record))
	ctx := context.Background()
	var want []string
	for i := range 100 {
		e := ev(i, 10)
		switch i {
		case 17:
			e["id"] = strings.Repeat("x", 300)
		case 42:
			e["id"] = strings.Repeat("😀", 129) // 129 characters, 258 UTF-16 code units
		case 43:
			e["id"] = strings.Repeat("😀", 128) // exactly 256 code units: a key as it is
		}
		want = append(want, e["id"].(string))
		if err := p.Put(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if len(out.ok) != 100 || len(out.bad) != 0 {
		for id, err := range out.bad {
			t.Errorf("%.20s...: %.300v", id, err)
			break
		}
		t.Fatalf("stored %d, failed %d; want every one of 100 stored", len(out.ok), len(out.bad))
	}
	wantOnce(t, ids(t, readAll(t, arn)), want)
	if got := rec.sizes(); len(got) != 1 {
		t.Fatalf("%d PutRecords requests (%v), want 1", len(got), got)
	}
	keys := map[string]bool{}
	for _, e := range rec.batches[0] {
		keys[*e.PartitionKey] = true
	}
	if !keys[want[43]] || keys[want[42]] || keys[want[17]] {
		t.Fatal("a key of 256 code units was not kept as the id, or a longer one was")
	}
}

// TestKinesisBadPartitionKey: a partition key function that gives an
// event a key Kinesis would refuse fails that event at Put, naming the
// rule, and never reaches a batch: the other events are stored.
func TestKinesisBadPartitionKey(t *testing.T) {
	arn, name := stream(t, 1)
	out := newOutcomes()
	key := func(id string) string {
		switch id {
		case "e-00003":
			return ""
		case "e-00005":
			return strings.Repeat("k", 257)
		}
		return "tenant-" + id
	}
	p := producer.NewKinesis(client(testkinesis.Endpoint(t)), name, producer.WithLinger(time.Hour),
		producer.WithPartitionKey(key), producer.WithOnResult(out.record))
	ctx := context.Background()
	var stored []string
	for i := range 10 {
		err := p.Put(ctx, ev(i, 10))
		id := fmt.Sprintf("e-%05d", i)
		switch i {
		case 3, 5:
			if !errors.Is(err, producer.ErrPartitionKey) || !strings.Contains(err.Error(), "1 to 256") {
				t.Fatalf("Put %s: %v; want ErrPartitionKey naming 1 to 256", id, err)
			}
		default:
			if err != nil {
				t.Fatal(err)
			}
			stored = append(stored, id)
		}
	}
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}
	wantOnce(t, ids(t, readAll(t, arn)), stored)
	if len(out.ok) != 8 || len(out.bad) != 0 {
		t.Fatalf("outcomes: %d stored, %d failed", len(out.ok), len(out.bad))
	}
}
