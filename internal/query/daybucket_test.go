package query

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
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

// TestDayAndHourBucketsReadAlike: a source written as it happens over five
// days, quiet but for one busy hour, has GSI day buckets on the days after
// a quiet day and hour buckets on the others (the first, and the one after
// the busy day). Late events land in hours the days had not marked. For
// many random queries, every path pages through exactly the reference
// list, across days of both layouts.
//
// 20 queries, five of them on day edges, each paged in at most about nine
// pages (the limit is at least an eighth of the events), by four paths:
// about 300 pages, whose cursors fall in days of both layouts. 30 queries
// at limit 9 over up to 460 events made 860 pages and no other kind of
// case.
func TestDayAndHourBucketsReadAlike(t *testing.T) {
	t.Parallel() // its own table (or the shared corpus, read only); it waits on DynamoDB Local more than on the CPU
	table := testddb.Table(t)
	client := testddb.Client(t, testddb.Endpoint(t))
	cfg := ingest.DefaultConfig(table)
	cfg.Shards.Default, cfg.GSIShards.Default = 4, 2
	clock := time.Time{}
	in := ingest.New(cfg, client, ingest.Options{Now: func() time.Time { return clock }})
	c := &corpus{table: table, source: "mixed #1/ü"}
	r := rand.New(rand.NewPCG(3, 4))
	write := func(es []ev) {
		t.Helper()
		var k events.KinesisEvent
		for i, e := range es {
			b, _ := json.Marshal(map[string]any{"id": e.ID, "source": c.source, "type": e.Type, "subject": e.Subject, "time": e.Time.Format(time.RFC3339Nano)})
			k.Records = append(k.Records, events.KinesisEventRecord{EventSource: "aws:kinesis", Kinesis: events.KinesisRecord{Data: b, SequenceNumber: fmt.Sprint(i)}})
		}
		if resp, err := in.Kinesis(loading(t), k); err != nil || len(resp.BatchItemFailures) > 0 {
			t.Fatalf("ingest: %v %v", err, resp.BatchItemFailures)
		}
		c.events = append(c.events, es...)
	}
	event := func(at time.Time) ev {
		e := ev{ID: fmt.Sprintf("%s-%d", []string{"a", "B", "#", "ü"}[r.IntN(4)], r.IntN(1000000)), Type: []string{"x", "y"}[r.IntN(2)],
			Subject: fmt.Sprint(r.IntN(3)), Time: at}
		if n := len(c.events); n > 0 && r.IntN(6) == 0 && c.events[n-1].Time.Hour() == at.Hour() {
			e.Time = c.events[n-1].Time // shares a timestamp
		}
		return e
	}
	busy := time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)
	for h := time.Date(2026, 11, 18, 0, 0, 0, 0, time.UTC); h.Before(now); h = h.Add(time.Hour) {
		n := 1 + r.IntN(6)
		switch {
		case h.Equal(busy):
			n = shardmap.QuietHour + 50
		case r.IntN(4) == 0:
			continue // an hour without events
		}
		var es []ev
		for range n {
			es = append(es, event(h.Add(time.Duration(r.Int64N(int64(time.Hour)))).Truncate(time.Millisecond)))
		}
		clock = h.Add(time.Hour)
		write(es)
	}
	want := map[string]bool{"2026-11-18": false, "2026-11-19": true, "2026-11-20": true, "2026-11-21": false, "2026-11-22": true}
	for day, daily := range want {
		d, _, err := shardmap.ReadDay(context.Background(), client, table, bucketing.Stream{Space: bucketing.Events, Source: c.source}, day)
		if err != nil || d.Sched == nil || d.Sched[0].DayBucket != daily {
			t.Fatalf("%s: %+v %v; want day bucket %v", day, d.Sched, err, daily)
		}
	}
	// Late events, into every day at an hour it may not have marked.
	clock = now
	var late []ev
	for day := range 5 {
		late = append(late, event(time.Date(2026, 11, 18+day, 5, 30, 0, 0, time.UTC)))
	}
	write(late)
	c.events = dedupe(c.events)

	for n := range 20 {
		from := time.Date(2026, 11, 17, 22, 0, 0, 0, time.UTC).Add(time.Duration(r.Int64N(int64(110 * time.Hour)))).Truncate(time.Second)
		to := from.Add(time.Duration(r.Int64N(int64(120*time.Hour))) + time.Millisecond)
		if n%4 == 0 { // day edges
			from, to = from.Truncate(24*time.Hour), to.Truncate(24*time.Hour).Add(24*time.Hour)
		}
		o := []Order{Asc, Desc}[r.IntN(2)]
		typ := []string{"", "", "x"}[r.IntN(3)]
		wantKeys := c.reference(from, to, typ, "", o)
		limit := max(len(wantKeys)/8+1, []int{9, 40, 100, 1000}[r.IntN(4)])
		q := url.Values{"source": {c.source}, "from": {from.Format(time.RFC3339Nano)}, "to": {to.Format(time.RFC3339Nano)},
			"order": {string(o)}, "limit": {fmt.Sprint(limit)}}
		if typ != "" {
			q.Set("type", typ)
		}
		for _, mode := range []string{"", PathGSI, PathScatter, "consistent"} {
			h, qq := handlerOn(t, table, testddb.Endpoint(t), mode), clone(q)
			if mode == "consistent" {
				h = handlerOn(t, table, testddb.Endpoint(t), "")
				qq.Set("consistent", "true")
			}
			got, _ := pageThrough(t, h, qq, 2000)
			if strings.Join(got, "\n") != strings.Join(wantKeys, "\n") {
				d := firstDiff(got, wantKeys)
				t.Fatalf("query %d (%v, %q): got %d events, want %d; first diff at %d", n, q, mode, len(got), len(wantKeys), d)
			}
		}
	}
}
