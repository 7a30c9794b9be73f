package ingest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/shardline/shardline/internal/item"
	"github.com/shardline/shardline/internal/schema"
)

// reviewerEvent is the input of issue 28's item 3: an event under a
// MAX_EVENT_BYTES of 200,000 whose time is 95,000 characters U+0080, 190 KB
// as sent; a reason quoting it with %q is three times that.
func reviewerEvent() []byte {
	return []byte(`{"specversion":"1.0","id":"wide","source":"s","type":"t","time":"` + strings.Repeat("\u0080", 95_000) + `"}`)
}

func raisedLimit(c *Config) { c.MaxEventBytes = 200_000 }

// quarantinedWithin reads the one quarantine item, checks that it is within
// DynamoDB's 400 KB as DynamoDB counts, and returns it.
func quarantinedWithin(t *testing.T, e *env) map[string]types.AttributeValue {
	t.Helper()
	q := e.itemsIn(t, "Q#")
	if len(q) != 1 {
		t.Fatalf("%d records quarantined, want 1", len(q))
	}
	if n := item.Bytes(q[0]); n > item.MaxItemBytes {
		t.Fatalf("the quarantine item is %d bytes, over %d", n, item.MaxItemBytes)
	}
	if r := s(q[0], schema.Reason); len(r) > item.MaxReasonBytes || !strings.HasPrefix(r, "time: ") {
		t.Fatalf("reason of %d bytes, want at most %d naming the field: %.80q", len(r), item.MaxReasonBytes, r)
	}
	return q[0]
}

// TestQuarantineOfAWideTimeThroughTheAPI: the reviewer's event, POSTed,
// is refused with 400 and quarantined whole, its reason cut; it was a 503
// on every try, its 760 KB quarantine item refused by DynamoDB.
func TestQuarantineOfAWideTimeThroughTheAPI(t *testing.T) {
	e := newEnv(t, false, raisedLimit)
	raw := reviewerEvent()
	resp, err := e.h.HTTP(context.Background(), post(string(raw), "application/json"))
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 400 {
		t.Fatalf("status %d, want 400: %.300s", resp.StatusCode, resp.Body)
	}
	if r := decodeResponse(t, resp.Body); r.Accepted != 0 || len(r.Rejected) != 1 || !strings.HasPrefix(r.Rejected[0].Error, "time: ") {
		t.Fatalf("answer %.300s", resp.Body)
	}
	got, whole, err := item.RawOf(quarantinedWithin(t, e))
	if err != nil || !whole || !bytes.Equal(got, raw) {
		t.Fatalf("raw of %d bytes, whole %v, %v; want the %d bytes sent", len(got), whole, err, len(raw))
	}
}

// TestQuarantineOfAWideTimeFromKinesis: the same event on the stream is
// quarantined and not reported; it was reported on every delivery until
// the mapping gave the batch up.
func TestQuarantineOfAWideTimeFromKinesis(t *testing.T) {
	e := newEnv(t, false, raisedLimit)
	raw := reviewerEvent()
	resp, err := e.h.Kinesis(invocation(t), kinesisBatch(raw, eventJSON("fine", "1", fixtureNow)))
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.BatchItemFailures) != 0 {
		t.Fatalf("%d records reported, want none: the record is quarantined", len(resp.BatchItemFailures))
	}
	got, whole, err := item.RawOf(quarantinedWithin(t, e))
	if err != nil || !whole || !bytes.Equal(got, raw) {
		t.Fatalf("raw of %d bytes, whole %v, %v; want the %d bytes sent", len(got), whole, err, len(raw))
	}
	if n := len(e.itemsIn(t, "E#")); n != 1 {
		t.Fatalf("%d events stored, want 1", n)
	}
}

// TestQuarantineItemNeverPasses400KB: whatever reason arrives and whatever
// the record's size, the quarantine item fits DynamoDB's 400 KB (DynamoDB
// Local refuses more) and is stored: the reason cut, saying so; the raw
// bytes whole, compressed, or cut with their size and SHA-256.
func TestQuarantineItemNeverPasses400KB(t *testing.T) {
	rng := rand.New(rand.NewPCG(28, 3))
	noise := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		return b
	}
	escaped := strings.Repeat(`\u0080`, 200_000) // 1.2 MB, as %q quotes U+0080
	cases := []struct {
		name   string
		reason string
		raw    []byte
		whole  bool
	}{
		{"1.2 MB reason, 190 KB record", escaped, reviewerEvent(), true},
		{"1.2 MB reason, 379,000 random bytes", escaped, noise(379_000), true},
		{"1.2 MB reason, 1 MiB random bytes", escaped, noise(1 << 20), false},
		{"1.2 MB reason, 1 MiB that compresses", escaped, bytes.Repeat([]byte("abc "), 1<<18), true},
		{"short reason, 400 KB random bytes", "event: x", noise(400_000), false},
		{"reason of multibyte characters", strings.Repeat("é", 300_000), []byte("{}"), true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, false, nil)
			units := []unit{rejectedUnit(0, c.raw, c.reason, item.Origin{StreamARN: "arn:aws:kinesis:us-east-1:000000000000:stream/test", ShardID: "shardId-000000000001", SequenceNumber: "1"}, fixtureNow)}
			out, st := e.h.store(context.Background(), units, true)
			if out[0] != quarantined {
				t.Fatalf("outcome %v, want quarantined: %v", out[0], st.firstErr)
			}
			q := e.itemsIn(t, "Q#")
			if len(q) != 1 {
				t.Fatalf("%d quarantined, want 1", len(q))
			}
			it := q[0]
			if n := item.Bytes(it); n > item.MaxItemBytes {
				t.Fatalf("item of %d bytes, over %d", n, item.MaxItemBytes)
			}
			checkReason(t, s(it, schema.Reason), c.reason)
			got, whole, err := item.RawOf(it)
			if err != nil || whole != c.whole {
				t.Fatalf("whole %v, want %v: %v", whole, c.whole, err)
			}
			if whole && !bytes.Equal(got, c.raw) {
				t.Fatalf("raw of %d bytes, want the %d received", len(got), len(c.raw))
			}
			if !whole {
				sum := sha256.Sum256(c.raw)
				if !bytes.HasPrefix(c.raw, got) || len(got) < 300_000 || s(it, schema.RawSHA256) != hex.EncodeToString(sum[:]) {
					t.Fatalf("cut to %d bytes, digest %q: want a prefix of the record and its SHA-256", len(got), s(it, schema.RawSHA256))
				}
				if n, ok := it[schema.RawSize].(*types.AttributeValueMemberN); !ok || n.Value != strconv.Itoa(len(c.raw)) {
					t.Fatalf("raw_size %v, want %d", it[schema.RawSize], len(c.raw))
				}
			}
		})
	}
}

// checkReason: a stored reason is the one given, or, when that is longer
// than MaxReasonBytes, a prefix of it that says it was cut.
func checkReason(t *testing.T, got, given string) {
	t.Helper()
	if len(given) <= item.MaxReasonBytes {
		if got != given {
			t.Fatalf("reason %q, want %q", got, given)
		}
		return
	}
	i := strings.Index(got, "… (reason cut")
	if len(got) > item.MaxReasonBytes || i < item.MaxReasonBytes/2 || !strings.HasPrefix(given, got[:i]) || !strings.Contains(got, strconv.Itoa(len(given))) {
		t.Fatalf("reason of %d bytes %.100q…%.80q: want at most %d, a prefix of the given and its full size", len(got), got, got[max(0, len(got)-80):], item.MaxReasonBytes)
	}
}
