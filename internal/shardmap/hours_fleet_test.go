package shardmap

import (
	"context"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/shardline/shardline/internal/schema"
	"github.com/shardline/shardline/pkg/bucketing"
	"github.com/shardline/shardline/testkit/testddb"
)

// counting is a DynamoDB client that counts the hour-index writes and
// reads it sends.
type counting struct {
	*dynamodb.Client
	writes, reads *atomic.Int64
}

func (c counting) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	c.writes.Add(1)
	return c.Client.UpdateItem(ctx, in, o...)
}

func (c counting) GetItem(ctx context.Context, in *dynamodb.GetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	c.reads.Add(1)
	return c.Client.GetItem(ctx, in, o...)
}

// TestAFleetMarksAQuietHourOnce: a quiet source spread over 64 Kinesis
// shards (one event every 10 s, each to another container) meets each of
// its hours in 64 containers, one after another. The first marks the hour;
// the others read the index, find the mark and write nothing: 1 write an
// hour, not 64 (issue 29: with 64 shards the marks alone passed 2 % of
// the events' write units). The hint is the first container's count. A
// container with a longer retention than the index's TTL still writes, so
// that the index outlives its events.
func TestAFleetMarksAQuietHourOnce(t *testing.T) {
	const fleet = 64
	ctx := context.Background()
	table := testddb.Table(t)
	base := testddb.Client(t, testddb.Endpoint(t))
	var writes, reads atomic.Int64
	c := counting{Client: base, writes: &writes, reads: &reads}
	src := bucketing.Stream{Space: bucketing.Events, Source: "device-0042"}
	day := "2026-11-24"
	containers := make([]*Hours, fleet)
	for i := range containers {
		containers[i] = &Hours{Client: c, Table: table, Retention: 30 * 24 * time.Hour}
	}
	for _, hr := range []int{9, 10} {
		writes.Store(0)
		reads.Store(0)
		for i, h := range containers {
			var counts [24]int32
			counts[hr] = 1 + int32(i%2)
			if err := h.Mark(ctx, src, day, counts); err != nil {
				t.Fatal(err)
			}
			if err := h.Mark(ctx, src, day, counts); err != nil { // its next event: remembered
				t.Fatal(err)
			}
		}
		if writes.Load() != 1 || reads.Load() != fleet {
			t.Errorf("hour %d: %d containers wrote %d marks and read the index %d times; want 1 mark and %d reads", hr, fleet, writes.Load(), reads.Load(), fleet)
		}
	}
	out, err := base.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: HoursKey(src, day), ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := DecodeHours(out.Item); err != nil || !slices.Equal(got, []int{9, 10}) {
		t.Fatalf("hours %v (%v), want [9 10]", got, err)
	}
	if n, ok := out.Item[hintPrefix+"09"].(*types.AttributeValueMemberN); !ok || n.Value != "1" {
		t.Errorf("hour 9's hint %v, want the first container's 1", out.Item[hintPrefix+"09"])
	}

	writes.Store(0)
	longer := &Hours{Client: c, Table: table, Retention: 60 * 24 * time.Hour}
	if err := longer.Mark(ctx, src, day, [24]int32{9: 1}); err != nil {
		t.Fatal(err)
	}
	out, err = base.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: HoursKey(src, day), ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	start, _ := time.Parse(bucketing.DayLayout, day)
	want := strconv.FormatInt(start.Add(62*24*time.Hour).Unix(), 10)
	if n, ok := out.Item[schema.TTL].(*types.AttributeValueMemberN); writes.Load() != 1 || !ok || n.Value != want {
		t.Errorf("a container with 60 days' retention wrote %d marks, the TTL is %v; want 1 mark and %s", writes.Load(), out.Item[schema.TTL], want)
	}
}
