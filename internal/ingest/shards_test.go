package ingest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/shardline/shardline/internal/schema"
	"github.com/shardline/shardline/internal/shardmap"
	"github.com/shardline/shardline/pkg/bucketing"
	"github.com/shardline/shardline/testkit/testddb"
)

// TestRaisingShardsMidDay: events written before a shard count is raised
// stay where they are when retried afterwards, and a reader that discovers
// the day's counts finds every event, old and new.
func TestRaisingShardsMidDay(t *testing.T) {
	e := newEnv(t, false, func(c *Config) { c.Shards.Default = 2 })
	day := fixtureNow.Truncate(24 * time.Hour)
	ten := day.Add(10 * time.Hour)
	var before, after [][]byte
	for i := range 200 {
		before = append(before, eventJSON("clicks", fmt.Sprintf("b-%d", i), ten.Add(-time.Hour+time.Duration(i)*15*time.Second)))
		after = append(after, eventJSON("clicks", fmt.Sprintf("a-%d", i), ten.Add(10*time.Minute+time.Duration(i)*time.Second)))
	}
	at := func(t time.Time) Options { return Options{Now: func() time.Time { return t }} }
	old := New(e.h.cfg, testddb.Client(t, testddb.Endpoint(t)), at(ten))
	if resp, err := old.Kinesis(invocation(t), kinesisBatch(before...)); err != nil || len(resp.BatchItemFailures) > 0 {
		t.Fatalf("%v %v", err, resp.BatchItemFailures)
	}
	cfg := e.h.cfg
	cfg.Shards.Default = 8
	// A container with the raised count retries the old batch at 10:00:30
	// (which records a step from 10:08), and one at 10:30 writes new events.
	for _, step := range []struct {
		now   time.Time
		batch [][]byte
	}{{ten.Add(30 * time.Second), before}, {ten.Add(30 * time.Minute), after}} {
		h := New(cfg, testddb.Client(t, testddb.Endpoint(t)), at(step.now))
		if resp, err := h.Kinesis(invocation(t), kinesisBatch(step.batch...)); err != nil || len(resp.BatchItemFailures) > 0 {
			t.Fatalf("%v %v", err, resp.BatchItemFailures)
		}
	}
	if n := len(e.itemsIn(t, "Q#")); n != 0 {
		t.Fatalf("%d events quarantined; the test's times are off", n)
	}
	if n := len(e.itemsIn(t, "E#")); n != 400 {
		t.Fatalf("%d items, want 400: the retry duplicated events", n)
	}
	// The reader's way in: the shard record, then one query per shard.
	reg := &shardmap.Registry{Client: e.client, Table: e.table}
	src := bucketing.Stream{Space: bucketing.Events, Source: "clicks"}
	sched, found, err := reg.Lookup(context.Background(), src, bucketing.Day(ten))
	if err != nil || !found || sched.MaxShards() != 8 {
		t.Fatalf("Lookup: %+v %v %v", sched, found, err)
	}
	total := 0
	shardsOf := map[string]map[int]bool{"a": {}, "b": {}}
	for shard := range sched.MaxShards() {
		p := dynamodb.NewQueryPaginator(e.client, &dynamodb.QueryInput{
			TableName:                 aws.String(e.table),
			KeyConditionExpression:    aws.String("#pk = :pk"),
			ExpressionAttributeNames:  map[string]string{"#pk": schema.PK},
			ExpressionAttributeValues: map[string]types.AttributeValue{":pk": &types.AttributeValueMemberS{Value: src.PK(bucketing.Day(ten), shard)}},
			ConsistentRead:            aws.Bool(true),
		})
		for p.HasMorePages() {
			out, err := p.NextPage(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			total += len(out.Items)
			for _, it := range out.Items {
				_, id, _ := bucketing.ParseSortKey(s(it, schema.SK))
				shardsOf[id[:1]][shard] = true
			}
		}
	}
	if total != 400 {
		t.Fatalf("the reader found %d events, want 400", total)
	}
	if len(shardsOf["b"]) != 2 || len(shardsOf["a"]) != 8 {
		t.Fatalf("old events on %d shards (want 2), new on %d (want 8)", len(shardsOf["b"]), len(shardsOf["a"]))
	}
}
