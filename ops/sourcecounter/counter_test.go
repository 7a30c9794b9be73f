package sourcecounter

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/shardline/shardline/internal/counts"
)

// TestTimeWindowFixture: the sample invocation in events/ parses into the
// records that count, and an invocation without a shard id (no tumbling
// window on the mapping) is refused with a message that says what to set.
// The counter's counting itself is played in internal/counts' tests, beside
// the chain that took over from it.
func TestTimeWindowFixture(t *testing.T) {
	b, err := os.ReadFile("../../events/dynamodb-stream-window.json")
	if err != nil {
		t.Fatal(err)
	}
	var ev events.DynamoDBTimeWindowEvent
	if err := json.Unmarshal(b, &ev); err != nil {
		t.Fatal(err)
	}
	recs, skipped, err := parse(ev.Records)
	if err != nil || len(recs) != 1 || skipped != 1 || recs[0].source != "orders-service" || recs[0].typ != "com.example.order.placed" {
		t.Fatalf("parse: %+v %d %v", recs, skipped, err)
	}
	ev.ShardID = ""
	c := &Counter{}
	resp, _, err := c.Handle(context.Background(), ev)
	if !errors.Is(err, counts.ErrNoShard) || resp.State == nil {
		t.Fatalf("no shard id: %v, state %v", err, resp.State)
	}
}
