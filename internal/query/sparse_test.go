package query

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/shardline/shardline/internal/ingest"
	"github.com/shardline/shardline/internal/shardmap"
	"github.com/shardline/shardline/pkg/bucketing"
	"github.com/shardline/shardline/testkit/testddb"
)

// store writes events of source at times through the real ingest handler,
// one Kinesis invocation per batch of 50, as a warm container would.
func store(t *testing.T, h *ingest.Handler, source string, times []time.Time) {
	t.Helper()
	var k events.KinesisEvent
	flush := func() {
		if resp, err := h.Kinesis(loading(t), k); err != nil || len(resp.BatchItemFailures) > 0 {
			t.Fatalf("ingest: %v %v", err, resp.BatchItemFailures)
		}
		k.Records = nil
	}
	for i, at := range times {
		b, _ := json.Marshal(map[string]any{"id": fmt.Sprintf("%s-%d", source, at.UnixNano()), "source": source, "type": "reading", "time": at.Format(time.RFC3339Nano)})
		k.Records = append(k.Records, events.KinesisEventRecord{EventSource: "aws:kinesis", Kinesis: events.KinesisRecord{Data: b, SequenceNumber: fmt.Sprint(i)}})
		if len(k.Records) == 50 {
			flush()
		}
	}
	if len(k.Records) > 0 {
		flush()
	}
}

// TestSparseSourcePagesCostWhatTheyReturn: a source that writes one event
// an hour, as it happens, for a week. Its first day has hour buckets on
// the GSI; every later day follows a quiet one, so its GSI bucket is the
// day. "Newest 100 of 7 days" from a cold container costs at most 12
// requests over the pages that return those 100 events (issue 10); it
// takes 7: a Query of the first day's shard record and hour index, one
// BatchGetItem of the next seven days', and a GSI query per day bucket, 5.
// Every event comes once on every path.
func TestSparseSourcePagesCostWhatTheyReturn(t *testing.T) {
	table := testddb.Table(t)
	client := testddb.Client(t, testddb.Endpoint(t))
	clock := now.Add(-7 * 24 * time.Hour)
	in := ingest.New(ingest.DefaultConfig(table), client, ingest.Options{Now: func() time.Time { return clock }})
	var times []time.Time
	for i := 7*24 - 1; i >= 0; i-- {
		times = append(times, now.Add(-time.Duration(i)*time.Hour-17*time.Minute))
	}
	for _, at := range times { // each as it happens
		clock = at.Add(time.Second)
		store(t, in, "quiet", []time.Time{at})
	}
	for d := now.Add(-7 * 24 * time.Hour); d.Before(now); d = d.Add(24 * time.Hour) {
		day, _, err := shardmap.ReadDay(context.Background(), client, table, bucketing.Stream{Space: bucketing.Events, Source: "quiet"}, bucketing.Day(d))
		if err != nil {
			t.Fatal(err)
		}
		if first := bucketing.Day(d) == bucketing.Day(times[0]); day.Sched[0].DayBucket == first {
			t.Fatalf("%s: GSI day bucket %v, want %v", bucketing.Day(d), day.Sched[0].DayBucket, !first)
		}
	}
	q := url.Values{"source": {"quiet"}, "from": {now.Add(-7 * 24 * time.Hour).Format(time.RFC3339)}, "to": {now.Format(time.RFC3339)}}
	for _, mode := range []string{"", PathGSI, PathScatter, "consistent"} {
		h, qq := handlerOn(t, table, testddb.Endpoint(t), mode), clone(q)
		if mode == "consistent" {
			h = handlerOn(t, table, testddb.Endpoint(t), "")
			qq.Set("consistent", "true")
		}
		got, plans := pageThrough(t, h, qq, 10)
		if len(got) != len(times) || len(distinct(got)) != len(got) {
			t.Fatalf("%q: %d events, want %d once each", mode, len(got), len(times))
		}
		first := plans[0]
		t.Logf("%q: newest 100 of 7 days: %+v", mode, first)
		switch mode {
		case "":
			if first.Path != PathGSI || !strings.HasPrefix(first.Reason, "cost: ") || first.Requests > 7 {
				t.Fatalf("by cost: %+v; want the GSI's day buckets, 7 requests", first)
			}
		case PathGSI:
			if first.Requests > 7 {
				t.Fatalf("GSI: %+v; want 7 requests", first)
			}
		default: // the base table's 4 shards a day, and the days' two reads
			if first.Requests > 5*4+2 {
				t.Fatalf("%q: %+v; want at most 22 requests", mode, first)
			}
		}
	}
}

// TestEmptyHoursAreSkipped: a source that wrote in three hours of a week
// is read on the GSI with a query per hour that holds events and a read
// per day, not one per hour of the range. An event written later into an
// hour the container had seen empty is found on the next page all the
// same: a page trusts the cache of hour indexes only to include an hour,
// and reads the day afresh before it skips one.
func TestEmptyHoursAreSkipped(t *testing.T) {
	table := testddb.Table(t)
	client := testddb.Client(t, testddb.Endpoint(t))
	in := ingest.New(ingest.DefaultConfig(table), client, ingest.Options{Now: func() time.Time { return now }})
	busy := []time.Time{now.Add(-10 * time.Minute), now.Add(-50*time.Hour - 5*time.Minute), now.Add(-140*time.Hour - time.Minute)}
	var times []time.Time
	for _, at := range busy {
		for i := range 20 {
			times = append(times, at.Add(-time.Duration(i)*time.Second))
		}
	}
	store(t, in, "bursty", times)
	h := handlerOn(t, table, testddb.Endpoint(t), PathGSI)
	q := url.Values{"source": {"bursty"}, "limit": {"1000"}, "from": {now.Add(-7 * 24 * time.Hour).Format(time.RFC3339)}, "to": {now.Format(time.RFC3339)}}
	got, plans := pageThrough(t, h, clone(q), 2)
	if len(got) != 60 || len(plans) != 1 {
		t.Fatalf("%d events in %d pages", len(got), len(plans))
	}
	// 3 hours with events, 1 GSI shard: 3 queries; and the 8 days the range
	// touches, a read each (or two, for a day the cache had without an hour)
	if plans[0].Requests > 3+8 {
		t.Fatalf("plan %+v: more than a query per hour with events and a read per day", plans[0])
	}
	t.Logf("3 busy hours of 7 days: %+v", plans[0])

	// A late event lands in an hour this container saw empty a moment ago.
	late := now.Add(-100*time.Hour - 30*time.Minute)
	store(t, in, "bursty", []time.Time{late})
	got, _ = pageThrough(t, h, clone(q), 2)
	if len(got) != 61 || !strings.Contains(strings.Join(got, " "), fmt.Sprintf("bursty-%d@", late.UnixNano())) {
		t.Fatalf("after a late event: %d events, the late one missing", len(got))
	}
}

// clone is a copy of q for pageThrough, which sets the cursor in what it
// is given.
func clone(q url.Values) url.Values {
	c := url.Values{}
	for k, v := range q {
		c[k] = append([]string(nil), v...)
	}
	return c
}
