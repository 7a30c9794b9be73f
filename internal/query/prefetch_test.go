package query

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/shardline/shardline/internal/ingest"
	"github.com/shardline/shardline/internal/shardmap"
	"github.com/shardline/shardline/pkg/bucketing"
	"github.com/shardline/shardline/testkit/faultproxy"
	"github.com/shardline/shardline/testkit/testddb"
)

// counting is a DynamoDB client that counts what the reader reads: the
// items each Query evaluated (ScannedCount, what DynamoDB bills and what
// the function holds in memory) and the items each BatchGetItem returned.
type counting struct {
	Client
	items atomic.Int64
}

func (c *counting) Query(ctx context.Context, in *dynamodb.QueryInput, o ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	out, err := c.Client.Query(ctx, in, o...)
	if err == nil {
		c.items.Add(int64(out.ScannedCount))
	}
	return out, err
}

func (c *counting) BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	out, err := c.Client.BatchGetItem(ctx, in, o...)
	if err == nil {
		for _, items := range out.Responses {
			c.items.Add(int64(len(items)))
		}
	}
	return out, err
}

// burst is a source that wrote 400 events an hour for 16 hours, from
// 05:00 to 21:00 the day before now, and then nothing for 15 hours; and 5
// events the day before that. It has 4 shards and 8 GSI shards.
type burst struct {
	table  string
	events []ev // newest first
}

var (
	burstOnce sync.Once
	burstData *burst
)

const (
	burstSource  = "burst"
	burstPerHour = 400
)

func loadBurst(t *testing.T) *burst {
	t.Helper()
	burstOnce.Do(func() {
		b := &burst{table: testddb.SharedTable(t)}
		var all []ev
		for h := range 16 {
			start := now.Add(-15*time.Hour - time.Duration(h+1)*time.Hour)
			for i := range burstPerHour {
				all = append(all, ev{ID: fmt.Sprintf("b%02d-%03d", h, i), Time: start.Add(time.Duration(i) * time.Hour / burstPerHour)})
			}
		}
		for i := range 5 {
			all = append(all, ev{ID: fmt.Sprintf("old-%d", i), Time: time.Date(2026, 11, 20, 12, i, 0, 0, time.UTC)})
		}
		cfg := ingest.DefaultConfig(b.table)
		cfg.Shards.Default, cfg.GSIShards.Default = 4, 8
		in := ingest.New(cfg, testddb.Client(t, testddb.Endpoint(t)), ingest.Options{Now: func() time.Time { return now }})
		// The busy day first, then the old one: the busy day's record is
		// created without a quiet day before it, so its GSI buckets are
		// hours, which these tests look ahead over.
		for _, part := range [][]ev{all[:16*burstPerHour], all[16*burstPerHour:]} {
			var kev events.KinesisEvent
			for i := 0; i < len(part); i += 50 {
				var batch []json.RawMessage
				for _, e := range part[i:min(i+50, len(part))] {
					raw, _ := json.Marshal(map[string]any{"id": e.ID, "source": burstSource, "type": "t", "time": e.Time.Format(time.RFC3339Nano)})
					batch = append(batch, raw)
				}
				data, _ := json.Marshal(batch)
				kev.Records = append(kev.Records, events.KinesisEventRecord{EventSource: "aws:kinesis",
					Kinesis: events.KinesisRecord{Data: data, SequenceNumber: fmt.Sprint(i)}})
			}
			if resp, err := in.Kinesis(loading(t), kev); err != nil || len(resp.BatchItemFailures) > 0 {
				t.Fatalf("load burst: %v %v", err, resp.BatchItemFailures)
			}
		}
		stripHints(t, b.table, burstSource, "2026-11-20", "2026-11-21")
		b.events = all                  // already newest first: hour by hour backwards, then the older day
		for i, j := 0, 0; i < 16; i++ { // within each hour, newest first
			hour := b.events[j : j+burstPerHour]
			for x, y := 0, len(hour)-1; x < y; x, y = x+1, y-1 {
				hour[x], hour[y] = hour[y], hour[x]
			}
			j += burstPerHour
		}
		old := b.events[16*burstPerHour:]
		for x, y := 0, len(old)-1; x < y; x, y = x+1, y-1 {
			old[x], old[y] = old[y], old[x]
		}
		burstData = b
	})
	if burstData == nil {
		t.Fatal("burst failed to load")
	}
	return burstData
}

func (b *burst) newest(n int) []string {
	var out []string
	for _, e := range b.events[:n] {
		out = append(out, e.ID+"@"+e.Time.Format(time.RFC3339Nano))
	}
	return out
}

func burstQuery(limit int, consistent bool) url.Values {
	q := url.Values{"source": {burstSource}, "limit": {fmt.Sprint(limit)},
		"from": {time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC).Format(time.RFC3339)}, "to": {now.Format(time.RFC3339)}}
	if consistent {
		q.Set("consistent", "true")
	}
	return q
}

func pageKeys(t *testing.T, body string) ([]string, EventsResponse) {
	t.Helper()
	var r EventsResponse
	if err := json.Unmarshal([]byte(body), &r); err != nil {
		t.Fatalf("%v: %.300s", err, body)
	}
	var keys []string
	for _, raw := range r.Events {
		var e struct{ ID, Time string }
		if err := json.Unmarshal(raw, &e); err != nil {
			t.Fatal(err)
		}
		keys = append(keys, e.ID+"@"+e.Time)
	}
	return keys, r
}

// TestPageReadsAreBounded: the newest 200 events after 15 quiet hours,
// with 8 GSI shards an hour (or 4 shards a day), read at most three times
// what the page returns, not every partition of every hour the reader
// looked ahead to. Paging through everything still returns each event once.
func TestPageReadsAreBounded(t *testing.T) {
	b := loadBurst(t)
	const limit = 200
	for _, consistent := range []bool{false, true} {
		c := &counting{Client: testddb.Client(t, testddb.Endpoint(t))}
		h := checked(t, New(Config{Table: b.table}, c, Options{Now: func() time.Time { return now }}))
		status, _, body := get(t, h, EventsRoute, burstQuery(limit, consistent))
		if status != 200 {
			t.Fatalf("%d %s", status, body)
		}
		got, r := pageKeys(t, body)
		if strings.Join(got, ",") != strings.Join(b.newest(limit), ",") || r.NextCursor == "" {
			t.Fatalf("consistent=%v: got %d events, not the newest %d", consistent, len(got), limit)
		}
		read := c.items.Load()
		t.Logf("consistent=%v: %d items read for a page of %d, plan %+v", consistent, read, limit, r.Plan)
		if read > 3*(limit+1) {
			t.Errorf("consistent=%v: %d items read for a page of %d; want at most %d", consistent, read, limit, 3*(limit+1))
		}

		c.items.Store(0)
		all, _ := pageThrough(t, h, burstQuery(1000, consistent), 20)
		if len(all) != len(b.events) || len(distinct(all)) != len(all) || strings.Join(all, ",") != strings.Join(b.newest(len(b.events)), ",") {
			t.Fatalf("consistent=%v: paging returned %d events, want %d once each", consistent, len(all), len(b.events))
		}
		read = c.items.Load()
		t.Logf("consistent=%v: %d items read to page through %d", consistent, read, len(all))
		if read > 2*int64(len(all)) {
			t.Errorf("consistent=%v: %d items read to page through %d; want at most twice that", consistent, read, len(all))
		}
	}
}

// TestUnneededBucketErrorDoesNotFailPage: a bucket the reader looked ahead
// to but the page did not need fails (throttled, every retry); the page is
// served anyway, by the path asked for.
func TestUnneededBucketErrorDoesNotFailPage(t *testing.T) {
	b := loadBurst(t)
	p := faultproxy.For(t, testddb.Endpoint(t))
	// Every bucket but the two newest busy hours (20:00 and 19:00 on the
	// 21st) and their day: fail each query of a partition of another hour or
	// day. A page of 500 reads 20:00 (400 events), comes back for more and
	// opens the next two hours at once: it needs 19:00 and not 18:00.
	failing := func(pk string) bool {
		if strings.Contains(pk, "#2026-11-20") {
			return true
		}
		for h := range 19 {
			if strings.Contains(pk, fmt.Sprintf("#2026-11-21T%02d#", h)) {
				return true
			}
		}
		return false
	}
	p.SetRule(func(r faultproxy.Request) (*faultproxy.Fault, faultproxy.Hold) {
		var in struct {
			ExpressionAttributeValues map[string]struct{ S string }
		}
		if r.Op == "Query" && json.Unmarshal(r.Body, &in) == nil && failing(in.ExpressionAttributeValues[":pk"].S) {
			return faultproxy.Throttled, nil
		}
		return nil, nil
	})
	h := handlerOn(t, b.table, p.URL, PathGSI) // the path that looks ahead over hours
	for _, consistent := range []bool{false, true} {
		want := PathGSI
		if consistent {
			want = PathScatter
		}
		status, _, body := get(t, h, EventsRoute, burstQuery(500, consistent))
		if status != 200 {
			t.Fatalf("consistent=%v: %d %s", consistent, status, body)
		}
		got, r := pageKeys(t, body)
		if r.Plan.Path != want || strings.Join(got, ",") != strings.Join(b.newest(500), ",") {
			t.Fatalf("consistent=%v: %d events, plan %+v", consistent, len(got), r.Plan)
		}
	}
	if p.Faults.Load() == 0 {
		t.Fatal("no bucket failed: the test did not look ahead")
	}
	// A page that does need a failing bucket still fails: 503, never a
	// short page.
	q := burstQuery(1000, true)
	q.Set("to", time.Date(2026, 11, 21, 6, 0, 0, 0, time.UTC).Format(time.RFC3339))
	status, _, body := get(t, h, EventsRoute, q)
	if status != 503 {
		t.Fatalf("a page that needed a failing bucket: %d %.200s", status, body)
	}
}

// stripHints removes the hints from the hour indexes of source on days, as
// in an index written before they existed. The burst tests are about how
// far a page looks ahead when it does not know how many events the next
// buckets hold: with hints it would open only what they say it needs.
func stripHints(t *testing.T, table, source string, days ...string) {
	t.Helper()
	var names []string
	attrs := map[string]string{}
	for h := range 24 {
		k := fmt.Sprintf("#n%02d", h)
		names = append(names, k)
		attrs[k] = fmt.Sprintf("n%02d", h)
	}
	for _, day := range days {
		_, err := testddb.Client(t, testddb.Endpoint(t)).UpdateItem(context.Background(), &dynamodb.UpdateItemInput{
			TableName:                aws.String(table),
			Key:                      shardmap.HoursKey(bucketing.Stream{Space: bucketing.Events, Source: source}, day),
			UpdateExpression:         aws.String("REMOVE " + strings.Join(names, ", ")),
			ExpressionAttributeNames: attrs,
		})
		if err != nil {
			t.Fatalf("strip hints of %s: %v", day, err)
		}
	}
}
