package shardmap

import (
	"context"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/shardline/shardline/internal/schema"
	"github.com/shardline/shardline/pkg/bucketing"
	"github.com/shardline/shardline/testkit/testddb"
)

// TestHourIndexTTLOnlyGrows: a writer with a shorter retention (an
// operator's command run with RETENTION_DAYS=7 beside functions at 30)
// marks its hours, by Mark and by Ahead, and leaves the index's TTL where
// the 30 days put it: before, it moved it 23 days earlier, and once the
// index expired readers skipped every hour of the day, events and all. A
// longer retention still moves the TTL later.
func TestHourIndexTTLOnlyGrows(t *testing.T) {
	ctx := context.Background()
	table := testddb.Table(t)
	c := testddb.Client(t, testddb.Endpoint(t))
	src := bucketing.Stream{Space: bucketing.Events, Source: "ttl/src"}
	day := "2026-11-24"
	start, _ := time.Parse(bucketing.DayLayout, day)
	hours := func(days int) *Hours {
		return &Hours{Client: c, Table: table, Retention: time.Duration(days) * 24 * time.Hour}
	}
	ttlFor := func(days int) int64 { return start.Add(time.Duration(2+days) * 24 * time.Hour).Unix() }
	check := func(when string, wantHours []int, wantTTL int64) {
		t.Helper()
		out, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: HoursKey(src, day), ConsistentRead: aws.Bool(true)})
		if err != nil {
			t.Fatal(err)
		}
		got, err := DecodeHours(out.Item)
		if err != nil {
			t.Fatal(err)
		}
		var ttl int64
		if n, ok := out.Item[schema.TTL].(*types.AttributeValueMemberN); ok {
			ttl, _ = strconv.ParseInt(n.Value, 10, 64)
		}
		if !slices.Equal(got, wantHours) || ttl != wantTTL {
			t.Fatalf("%s: hours %v, TTL %s; want %v, %s", when, got, time.Unix(ttl, 0).UTC(), wantHours, time.Unix(wantTTL, 0).UTC())
		}
	}
	if err := hours(30).Mark(ctx, src, day, [24]int32{9: 5}); err != nil {
		t.Fatal(err)
	}
	check("marked at 30 days", []int{9}, ttlFor(30))

	short := hours(7)
	if err := short.Mark(ctx, src, day, [24]int32{10: QuietHour}); err != nil {
		t.Fatal(err)
	}
	check("hour 10 marked at 7 days", []int{9, 10}, ttlFor(30))
	if err := short.Ahead(ctx, src, start.Add(10*time.Hour+59*time.Minute+30*time.Second)); err != nil {
		t.Fatal(err)
	}
	check("hour 11 marked ahead at 7 days", []int{9, 10, 11}, ttlFor(30))

	if err := hours(60).Mark(ctx, src, day, [24]int32{12: 1}); err != nil {
		t.Fatal(err)
	}
	check("hour 12 marked at 60 days", []int{9, 10, 11, 12}, ttlFor(60))
}
