package item

import (
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/shardline/shardline/internal/cloudevent"
	"github.com/shardline/shardline/internal/schema"
	"github.com/shardline/shardline/pkg/bucketing"
)

// TestChangedEventReadsWhatEventWrote: a stream record of an item Event
// built names the event it was built from, and only event items pass the
// mappings' filter.
func TestChangedEventReadsWhatEventWrote(t *testing.T) {
	at := time.Date(2026, 11, 22, 10, 30, 0, 123e6, time.UTC)
	e := cloudevent.Event{Source: "a#b/c d", ID: "id-1", Time: at, Type: "t"}
	it := Event(e, bucketing.Step{Shards: 8, GSIShards: 2}, time.Hour)
	keys := map[string]events.DynamoDBAttributeValue{
		schema.PK: events.NewStringAttribute(it.PK), schema.SK: events.NewStringAttribute(it.SK),
	}
	r := events.DynamoDBEventRecord{EventName: "MODIFY", Change: events.DynamoDBStreamRecord{Keys: keys}}
	if !IsEventChange(r, "INSERT", "MODIFY") || IsEventChange(r, "INSERT") {
		t.Fatal("a MODIFY of an event item: wrong verdict")
	}
	got, err := ChangedEvent(r)
	if err != nil {
		t.Fatal(err)
	}
	if got.Source != e.Source || got.ID != e.ID || !got.Time.Equal(at) || got.Shard != bucketing.Shard(bucketing.Hash(e.Source, e.ID), 8) {
		t.Fatalf("ChangedEvent = %+v, want %s/%s at %v", got, e.Source, e.ID, at)
	}
	r.Change.Keys = map[string]events.DynamoDBAttributeValue{schema.PK: events.NewStringAttribute("Q#2026-11-22#0")}
	if IsEventChange(r, "INSERT", "MODIFY") {
		t.Fatal("a quarantine item passed as an event item")
	}
	if _, err := NewImageString(r, schema.Event); err == nil {
		t.Fatal("no new image, no error")
	}
}
