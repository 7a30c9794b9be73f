package counts

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/shardline/shardline/internal/params"
)

var at = time.Date(2026, 11, 22, 12, 34, 56, 0, time.UTC)

func TestParseRequestNamesTheBadParameter(t *testing.T) {
	for raw, param := range map[string]string{
		"":                     "source",
		"source=":              "source",
		"source=a&interval=2m": "interval",
		"source=a&interval=1m&from=2026-11-20T00:00:00Z": "interval", // 2,915 buckets
		"source=a&from=2026-10-01T00:00:00Z":             "to",       // over 31 days
		"source=a&group_by=subject":                      "group_by",
		"source=a&type=":                                 "type",
		"source=a&limit=5":                               "limit",
		"source=a&source=b":                              "source",
		"source=a&from=1795348800000&to=1795348800000":   "from",
		"source=a&from=tomorrow":                         "from",
	} {
		_, err := ParseRequest(raw, at)
		var pe *params.Error
		if !errors.As(err, &pe) || pe.Param != param {
			t.Errorf("%q: got %v, want an error naming %q", raw, err, param)
		}
	}
}

func TestParseRequestRoundsAndPicksTheInterval(t *testing.T) {
	for _, c := range []struct {
		raw                string
		interval, from, to string
		buckets            int
	}{
		{"source=a", "1m", "2026-11-21T12:35:00Z", "2026-11-22T12:35:00Z", 1440},
		{"source=a&from=2026-11-22T00:00:00Z&to=2026-11-23T00:00:00Z", "1m", "2026-11-22T00:00:00Z", "2026-11-23T00:00:00Z", 1440},
		{"source=a&from=2026-11-15T00:00:00Z", "15m", "2026-11-15T00:00:00Z", "2026-11-22T12:45:00Z", 723},
		{"source=a&from=2026-10-22T12:34:56Z&interval=1h", "1h", "2026-10-22T12:00:00Z", "2026-11-22T13:00:00Z", 745},
		{"source=a&from=1795262400000&to=1795348800000&interval=1d", "1d", "2026-11-21T00:00:00Z", "2026-11-23T00:00:00Z", 2},
	} {
		r, err := ParseRequest(c.raw, at)
		if err != nil {
			if c.buckets > MaxBuckets {
				continue
			}
			t.Fatalf("%q: %v", c.raw, err)
		}
		if r.Name != c.interval || r.From.Format(time.RFC3339) != c.from || r.To.Format(time.RFC3339) != c.to || r.Buckets() != c.buckets {
			t.Errorf("%q: %s %s..%s (%d buckets), want %s %s..%s (%d)", c.raw, r.Name, r.From.Format(time.RFC3339), r.To.Format(time.RFC3339),
				r.Buckets(), c.interval, c.from, c.to, c.buckets)
		}
	}
}

// TestTimeWindowFixture: the sample invocation in events/ decodes into the
// real aws-lambda-go type, and an invocation without a shard id (no tumbling
// window on the mapping) is refused with a message that says what to set.
// The previous release's counter is held to the same in ops/sourcecounter.
func TestTimeWindowFixture(t *testing.T) {
	b, err := os.ReadFile("../../events/dynamodb-stream-window.json")
	if err != nil {
		t.Fatal(err)
	}
	var ev events.DynamoDBTimeWindowEvent
	if err := json.Unmarshal(b, &ev); err != nil {
		t.Fatal(err)
	}
	if ev.ShardID == "" || len(ev.Records) != 2 || ev.Records[0].EventName != "INSERT" {
		t.Fatalf("fixture decoded to %+v", ev)
	}
	recs, skipped, err := parse(ev.Records)
	if err != nil || len(recs) != 1 || skipped != 1 || recs[0].source != "orders-service" || recs[0].typ != "com.example.order.placed" {
		t.Fatalf("parse: %+v %d %v", recs, skipped, err)
	}
	ev.ShardID = ""
	c := &Chain{}
	resp, _, err := c.HandleChain(context.Background(), ev)
	if !errors.Is(err, ErrNoShard) || resp.State == nil {
		t.Fatalf("no shard id: %v, state %v", err, resp.State)
	}
}

func TestSequenceNumbers(t *testing.T) {
	for _, c := range []struct{ a, b string }{{"9", "10"}, {"000123", "124"}, {"4421584500000000017450439091", "4421584500000000017450439092"}} {
		a, _ := CanonicalSeq(c.a)
		b, _ := CanonicalSeq(c.b)
		if !SeqLess(a, b) || SeqLess(b, a) {
			t.Errorf("%s < %s not seen", c.a, c.b)
		}
	}
	for _, bad := range []string{"", "12a", "-1", "123456789012345678901234567890123456789"} {
		if _, err := CanonicalSeq(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
