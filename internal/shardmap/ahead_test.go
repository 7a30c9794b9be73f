package shardmap

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/shardline/shardline/internal/schema"
	"github.com/shardline/shardline/pkg/bucketing"
	"github.com/shardline/shardline/testkit/testddb"
)

// updates is an HoursReadAPI that records the hour-index updates it is asked
// for and answers each at once.
type updates struct {
	mu  sync.Mutex
	ins []*dynamodb.UpdateItemInput
}

func (u *updates) UpdateItem(_ context.Context, in *dynamodb.UpdateItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.ins = append(u.ins, in)
	return &dynamodb.UpdateItemOutput{}, nil
}

// GetItem finds no hour index: this fake keeps none, so every container
// writes what it marks, as when the fleet meets an hour at once.
func (u *updates) GetItem(context.Context, *dynamodb.GetItemInput, ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	return &dynamodb.GetItemOutput{}, nil
}

func (u *updates) count() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return len(u.ins)
}

// TestAheadSpreadsTheFleetsMarks: 400 containers write a busy source all
// hour. Each marks the next hour once, ahead of time, at a moment of its
// own in the hour's last quarter, so that no minute holds much more than
// its share of the fleet's marks, and none marks it again when it comes. A
// container that wrote the source only a little marks the next hour when
// it comes, as before.
func TestAheadSpreadsTheFleetsMarks(t *testing.T) {
	const fleet = 400
	ctx := context.Background()
	src := bucketing.Stream{Space: bucketing.Events, Source: "busy#1"}
	start := time.Date(2026, 11, 22, 23, 0, 0, 0, time.UTC)
	var busy [24]int32
	busy[23] = 120
	var some, one [24]int32
	some[23], one[23] = 5, 1

	clients := make([]*updates, fleet+1)
	hours := make([]*Hours, fleet+1)
	for i := range hours {
		clients[i] = &updates{}
		hours[i] = &Hours{Client: clients[i], Table: "t", Retention: 24 * time.Hour}
	}
	quiet := hours[fleet]
	perMinute := map[int]int{}
	for at := start; at.Before(start.Add(time.Hour)); at = at.Add(10 * time.Second) {
		for i, h := range hours {
			counts := some
			switch {
			case h == quiet && at.Second() == 0 && at.Minute()%10 == 0:
				counts = one // an event every ten minutes
			case h == quiet:
				continue
			case at.Equal(start):
				counts = busy
			}
			if err := h.Mark(ctx, src, "2026-11-22", counts); err != nil {
				t.Fatal(err)
			}
			before := clients[i].count()
			if err := h.Ahead(ctx, src, at); err != nil {
				t.Fatal(err)
			}
			if clients[i].count() > before {
				perMinute[at.Minute()]++
				if at.Before(start.Add(time.Hour - AheadFor)) {
					t.Errorf("container %d marked the next hour at %v, before the hour's last %v", i, at, AheadFor)
				}
				in := clients[i].ins[len(clients[i].ins)-1]
				if pk := schema.S(in.Key["pk"]); pk != src.MetaPK("2026-11-23") {
					t.Errorf("marked ahead under %q, want the next day's index", pk)
				}
			}
		}
	}
	total, most := 0, 0
	for _, n := range perMinute {
		total += n
		most = max(most, n)
	}
	if total != fleet {
		t.Fatalf("%d of %d busy containers marked the next hour ahead (quiet one included: %d requests)", total, fleet, clients[fleet].count())
	}
	if share := fleet / int(AheadFor/time.Minute-1); most > 2*share {
		t.Errorf("a minute held %d of the fleet's marks, want at most twice its share %d: %v", most, share, perMinute)
	}
	// When the hour comes, the busy containers have marked it; the quiet
	// one marks it now.
	var next [24]int32
	next[0] = 7
	for i, h := range hours {
		before := clients[i].count()
		if err := h.Mark(ctx, src, "2026-11-23", next); err != nil {
			t.Fatal(err)
		}
		if got := clients[i].count() - before; (h == quiet) != (got == 1) {
			t.Errorf("container %d (quiet %v) made %d requests to mark the hour when it came", i, h == quiet, got)
		}
	}
}

// TestAheadMarksTheHourWithoutAHint: on DynamoDB Local, an hour marked
// ahead is in the day's index with no hint, so a reader reads it and the
// next day is not taken for a quiet one's.
func TestAheadMarksTheHourWithoutAHint(t *testing.T) {
	ctx := context.Background()
	table := testddb.Table(t)
	c := &clock{time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)}
	reg := registry(t, table, c, 1, 1)
	src := bucketing.Stream{Space: bucketing.Events, Source: "busy"}
	if _, err := reg.Schedule(ctx, src, "2026-11-22"); err != nil {
		t.Fatal(err)
	}
	h := &Hours{Client: testddb.Client(t, testddb.Endpoint(t)), Table: table, Retention: 24 * time.Hour}
	var counts [24]int32
	counts[9] = QuietHour
	if err := h.Mark(ctx, src, "2026-11-22", counts); err != nil {
		t.Fatal(err)
	}
	if err := h.Ahead(ctx, src, time.Date(2026, 11, 22, 9, 59, 59, 999e6, time.UTC)); err != nil {
		t.Fatal(err)
	}
	out, err := testddb.Client(t, testddb.Endpoint(t)).Query(ctx, &dynamodb.QueryInput{
		TableName:              aws.String(table),
		KeyConditionExpression: aws.String("pk = :pk"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":pk": &types.AttributeValueMemberS{Value: src.MetaPK("2026-11-22")},
		},
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		t.Fatal(err)
	}
	d, err := DecodeDay(out.Items)
	if err != nil {
		t.Fatal(err)
	}
	if !d.Marked(9) || !d.Marked(10) || d.Marked(11) || d.Hint(9) != QuietHour || d.Hint(10) != -1 || d.Quiet() {
		t.Fatalf("day %+v: want hours 9 (hint %d) and 10 (no hint) marked, and not quiet", d, QuietHour)
	}
}
