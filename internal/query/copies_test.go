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
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/shardline/shardline/internal/catalog"
	"github.com/shardline/shardline/internal/ingest"
	"github.com/shardline/shardline/internal/schema"
	"github.com/shardline/shardline/internal/shardmap"
	"github.com/shardline/shardline/pkg/bucketing"
	"github.com/shardline/shardline/testkit/testddb"
)

// TestDaysWithoutCopiesReadWhole: with GSI_COPIES=where-it-pays, a source
// written as it happens over three days has GSI copies on its first day
// (no day before it), none on its second (it follows a quiet day: one
// table shard), which is raised to four table shards at noon, and copies
// again on its third (the day before was raised, so not quiet: 4/1); a
// source configured with as many GSI shards as
// table shards has none on any day. The events of a day without copies
// carry no GSI key. Every route pages through exactly the reference list,
// whatever path is asked for, and a page on days without copies says it
// read them from the table.
//
// The small limit is 7 on the narrow ranges around the changes (the
// raise, the first day without copies), and an eighth of the range on the
// whole three days and the raised day: about nine pages, whose cursors
// still fall in every day, where 7 made the 8 walks of each 55 and 27
// pages, 90 % of the test's requests.
func TestDaysWithoutCopiesReadWhole(t *testing.T) {
	t.Parallel() // its own table; it waits on DynamoDB Local more than on the CPU
	ctx := context.Background()
	table := testddb.Table(t)
	client := testddb.Client(t, testddb.Endpoint(t))
	cfg := ingest.DefaultConfig(table)
	cfg.GSICopies = shardmap.CopiesWhereItPays
	// The raise is the test's own, at noon: the hour-at-once deliveries
	// below would read to adaptive sharding as a rate they are not.
	cfg.ShardsMax = 0
	cfg.Shards.Overrides = map[string]int{"even": 2}
	cfg.GSIShards.Overrides = map[string]int{"even": 2}
	clock := time.Time{}
	in := ingest.New(cfg, client, ingest.Options{Now: func() time.Time { return clock }})
	c := &corpus{table: table, source: "dev #q/ü"}
	even := &corpus{table: table, source: "even"}
	r := rand.New(rand.NewPCG(29, 3))
	write := func(c *corpus, es []ev) {
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
		return ev{ID: fmt.Sprintf("%s-%d", []string{"a", "B", "#", "ü"}[r.IntN(4)], r.IntN(1000000)), Type: []string{"x", "y"}[r.IntN(2)],
			Subject: fmt.Sprint(r.IntN(3)), Time: at.Truncate(time.Millisecond)}
	}
	raiseAt := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	raised := false
	for h := time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC); h.Before(now); h = h.Add(time.Hour) {
		if h.Equal(raiseAt) {
			// Recorded as the ingest function records a raise: the
			// table count, from Lead after now.
			reg := &shardmap.Registry{Client: client, Table: table, NewDay: catalog.Lister(client, table), Now: func() time.Time { return raiseAt },
				Config: shardmap.Config{Shards: cfg.Shards, GSIShards: cfg.GSIShards, Retention: cfg.Retention, Carry: true, Copies: cfg.GSICopies}}
			s, ok, err := reg.Raise(ctx, bucketing.Stream{Space: bucketing.Events, Source: c.source}, "2026-11-21", 4, 4)
			if err != nil || !ok || s.Last().Shards != 4 || s.Last().Copied() {
				t.Fatalf("raise: %+v %v %v", s, ok, err)
			}
			raised = true
		}
		n := 1 + r.IntN(4)
		if raised {
			n = 10 + r.IntN(10) // busier since the raise
		}
		var es []ev
		for range n {
			es = append(es, event(h.Add(time.Duration(r.Int64N(int64(time.Hour))))))
		}
		clock = h.Add(time.Hour)
		if clock.After(now) {
			clock = now
		}
		write(c, es)
		if h.Hour()%5 == 0 {
			write(even, []ev{event(h.Add(time.Duration(r.Int64N(int64(time.Hour)))))})
		}
	}
	c.events, even.events = dedupe(c.events), dedupe(even.events)

	for _, tc := range []struct {
		src, day string
		copied   bool
		shards   int
	}{{c.source, "2026-11-20", true, 4}, {c.source, "2026-11-21", false, 4}, {c.source, "2026-11-22", true, 4},
		{even.source, "2026-11-20", false, 2}, {even.source, "2026-11-22", false, 2}} {
		d, _, err := shardmap.ReadDay(ctx, client, table, bucketing.Stream{Space: bucketing.Events, Source: tc.src}, tc.day)
		if err != nil || d.Sched == nil || d.Sched[0].Copied() != tc.copied || d.Sched.MaxShards() != tc.shards {
			t.Fatalf("%s %s: %+v %v; want copies %v on %d shards", tc.src, tc.day, d.Sched, err, tc.copied, tc.shards)
		}
	}
	d2, _, _ := shardmap.ReadDay(ctx, client, table, bucketing.Stream{Space: bucketing.Events, Source: c.source}, "2026-11-21")
	if d2.Sched[0].Shards != 1 {
		t.Fatalf("the day after a quiet day starts on %+v; want one table shard", d2.Sched)
	}

	// The events of days without copies have no GSI key: the GSI holds
	// only the first and third days of the first source.
	copies, items := 0, 0
	for _, it := range testddb.Scan(t, client, table) {
		pk := it[schema.PK].(*types.AttributeValueMemberS).Value
		k, err := bucketing.ParsePK(pk)
		if err != nil || k.Space != bucketing.Events {
			continue
		}
		items++
		_, has := it[schema.GSIPK]
		if want := k.Source == c.source && k.Day != "2026-11-21"; has != want {
			t.Fatalf("item %s: GSI key %v, want %v", pk, has, want)
		}
		if has {
			copies++
		}
	}
	if items != len(c.events)+len(even.events) || copies == 0 {
		t.Fatalf("%d items, %d with a GSI key; want %d items", items, copies, len(c.events)+len(even.events))
	}

	for n, q := range []struct {
		src      *corpus
		from, to time.Time
	}{
		{c, time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC), now},                                           // all three days
		{c, time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC), time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)}, // the raised day
		{c, time.Date(2026, 11, 21, 11, 30, 0, 0, time.UTC), time.Date(2026, 11, 21, 13, 0, 0, 0, time.UTC)},
		{c, time.Date(2026, 11, 20, 18, 0, 0, 0, time.UTC), time.Date(2026, 11, 21, 6, 0, 0, 0, time.UTC)}, // with copies, then without
		{c, now.Add(-time.Hour), now},
		{even, time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC), now},
	} {
		for _, o := range []Order{Asc, Desc} {
			wantKeys := q.src.reference(q.from, q.to, "", "", o)
			for _, limit := range []string{fmt.Sprint(max(7, len(wantKeys)/8+1)), "100", "1000"} {
				qv := url.Values{"source": {q.src.source}, "from": {q.from.Format(time.RFC3339Nano)}, "to": {q.to.Format(time.RFC3339Nano)},
					"order": {string(o)}, "limit": {limit}}
				for _, mode := range []string{"", PathGSI, PathScatter, "consistent"} {
					h, qq := handlerOn(t, table, testddb.Endpoint(t), mode), clone(qv)
					if mode == "consistent" {
						h = handlerOn(t, table, testddb.Endpoint(t), "")
						qq.Set("consistent", "true")
					}
					got, _ := pageThrough(t, h, qq, 2000)
					if strings.Join(got, "\n") != strings.Join(wantKeys, "\n") {
						t.Fatalf("range %d, %s, limit %s, path %q: got %d events, want %d; first diff at %d",
							n, o, limit, mode, len(got), len(wantKeys), firstDiff(got, wantKeys))
					}
				}
			}
		}
	}

	// A page on days without copies says so, even when the GSI path is
	// asked for; a page that reads both kinds of day says how many it read
	// from the table.
	plan := func(path string, from, to time.Time) Plan {
		t.Helper()
		_, plans := pageThrough(t, handlerOn(t, table, testddb.Endpoint(t), path),
			url.Values{"source": {c.source}, "from": {from.Format(time.RFC3339)}, "to": {to.Format(time.RFC3339)}, "limit": {"1000"}}, 1)
		return plans[0]
	}
	day2, day3 := time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC), time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)
	for _, path := range []string{"", PathGSI} {
		if p := plan(path, day2, day3); p.Path != PathScatter || !strings.Contains(p.Reason, "no GSI copies") {
			t.Errorf("a page of a day without copies, path %q asked: plan %+v", path, p)
		}
	}
	if p := plan(PathGSI, day2.Add(-6*time.Hour), day2.Add(6*time.Hour)); p.Path != PathGSI || !strings.Contains(p.Reason, "1 of the days read have no GSI copies") {
		t.Errorf("a page of a day with copies and one without: plan %+v", p)
	}
}
