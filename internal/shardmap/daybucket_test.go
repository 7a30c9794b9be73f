package shardmap

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/shardline/shardline/internal/schema"
	"github.com/shardline/shardline/pkg/bucketing"
	"github.com/shardline/shardline/testkit/testddb"
)

// TestQuietDaysGetADayBucket: a day whose previous day was quiet (never
// raised, no hour known to hold QuietHour events) is created with a GSI
// day bucket, which every later step keeps and every reader decodes; any
// other day keeps hour buckets.
func TestQuietDaysGetADayBucket(t *testing.T) {
	ctx := context.Background()
	table := testddb.Table(t)
	c := &clock{time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC)}
	r := registry(t, table, c, 4, 1)
	hours := &Hours{Client: testddb.Client(t, testddb.Endpoint(t)), Table: table, Retention: 24 * time.Hour}
	const day1, day2, day3 = "2026-11-20", "2026-11-21", "2026-11-22"
	stream := func(src string) bucketing.Stream { return bucketing.Stream{Space: bucketing.Events, Source: src} }
	// yesterday writes the previous day of src: its record, and n events
	// in each of the hours given.
	yesterday := func(src string, n int32, hrs ...int) {
		t.Helper()
		if _, err := r.Schedule(ctx, stream(src), day1); err != nil {
			t.Fatal(err)
		}
		var counts [24]int32
		for _, h := range hrs {
			counts[h] = n
		}
		if len(hrs) > 0 {
			if err := hours.Mark(ctx, stream(src), day1, counts); err != nil {
				t.Fatal(err)
			}
		}
	}
	yesterday("quiet", QuietHour-1, 0, 7, 23)
	yesterday("busy", 3, 0, 7)
	if err := (&Hours{Client: hours.Client, Table: table}).Mark(ctx, stream("busy"), day1, [24]int32{12: QuietHour}); err != nil {
		t.Fatal(err)
	}
	yesterday("silent", 0) // a record, but no event got written
	yesterday("raised", 1, 3)
	raiser := registry(t, table, &clock{time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC)}, 4, 1)
	if _, raised, err := raiser.Raise(ctx, stream("raised"), day1, 8, 2); err != nil || !raised {
		t.Fatalf("raise: %v %v", raised, err)
	}
	for src, want := range map[string]bool{"quiet": true, "busy": false, "silent": false, "raised": false, "new": false} {
		s, err := r.Schedule(ctx, stream(src), day2)
		if err != nil {
			t.Fatal(err)
		}
		if s[0].DayBucket != want {
			t.Errorf("%s: day bucket %v, want %v", src, s[0].DayBucket, want)
		}
	}
	if s, err := r.Schedule(ctx, bucketing.Stream{Space: bucketing.Quarantine}, day2); err != nil || s[0].DayBucket {
		t.Errorf("the quarantine: %+v %v; its keys have no GSI bucket", s, err)
	}

	// A raise of a day-bucket day keeps the bucket; readers decode it, and
	// a day after it, raised, has hour buckets again.
	s, raised, err := r.Raise(ctx, stream("quiet"), day2, 16, 4)
	if err != nil || !raised || len(s) != 2 || !s[1].DayBucket {
		t.Fatalf("raise of a day-bucket day: %+v %v %v", s, raised, err)
	}
	d, _, err := ReadDay(ctx, testddb.Client(t, testddb.Endpoint(t)), table, stream("quiet"), day2)
	if err != nil || !slices.Equal(d.Sched, s) {
		t.Fatalf("read back %+v, %v; want %+v", d.Sched, err, s)
	}
	// A container from before day buckets reads "sched" and would use hour
	// buckets: a day-bucket day has none, so such a container fails on it.
	raw, err := hours.Client.(*dynamodb.Client).GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: metaKey(stream("quiet").MetaPK(day2))})
	if err != nil {
		t.Fatal(err)
	}
	if _, old := raw.Item[schema.Schedule]; old || raw.Item[schema.DaySchedule] == nil {
		t.Fatalf("a day-bucket record holds %v: want %q and no %q", raw.Item, schema.DaySchedule, schema.Schedule)
	}
	if err := hours.Mark(ctx, stream("quiet"), day2, [24]int32{9: 1}); err != nil {
		t.Fatal(err)
	}
	c.t = c.t.Add(24 * time.Hour)
	if s, err := r.Schedule(ctx, stream("quiet"), day3); err != nil || s[0].DayBucket {
		t.Errorf("after a raised day: %+v %v; want hour buckets", s, err)
	}
}
