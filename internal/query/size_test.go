package query

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/shardline/shardline/internal/schema"
)

// inPayload is how many bytes body takes in the Lambda payload: encoded
// as a JSON string the way aws-lambda-go encodes a handler's answer
// (encoding/json, SetEscapeHTML(false)), less the quotes.
func inPayload(t testing.TB, body []byte) int {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(string(body)); err != nil {
		t.Fatal(err)
	}
	return buf.Len() - len(`""`+"\n")
}

// eventPayload is how many bytes an event's JSON, as stored, takes in the
// payload: written into the body by json.Marshal, as apigw.JSON does, then
// into the payload.
func eventPayload(t testing.TB, ev string) int {
	body, err := json.Marshal(json.RawMessage(ev))
	if err != nil {
		t.Fatal(err)
	}
	return inPayload(t, body)
}

// storedEvent is an event whose data is s, as ingest stores it: the JSON
// as sent, compacted, with <, > and & as they came.
func storedEvent(s string) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(map[string]any{"id": "1", "source": "s", "type": "t", "data": s})
	return strings.TrimSuffix(buf.String(), "\n")
}

var sizeSeeds = []string{"", "plain", `<script>&amp;</script>`, `"quoted" \back\slash`, "\x00\x01\x1f\b\f\n\r\t\x7f",
	"\u2028\u2029", "ünïcödé 日本 🙂", "\xff\xfe invalid", string([]byte{0xe2, 0x80}), "</>&\u2028\"\\\x01é"}

// TestEventSize: an event's size is exactly what it adds to the payload.
func TestEventSize(t *testing.T) {
	for _, s := range sizeSeeds {
		ev := storedEvent(s)
		it := map[string]types.AttributeValue{schema.Event: &types.AttributeValueMemberS{Value: ev}}
		if got, want := eventSize(it), eventPayload(t, ev)+1; got != want {
			t.Errorf("%q: eventSize %d, want %d", s, got, want)
		}
	}
	if eventSize(map[string]types.AttributeValue{}) != 0 {
		t.Error("an item without its event has a size")
	}
}

// TestRecordSize: a quarantine record's size is exactly what it adds to
// the payload.
func TestRecordSize(t *testing.T) {
	for _, s := range sizeSeeds {
		it := map[string]types.AttributeValue{
			schema.SK:     &types.AttributeValueMemberS{Value: "2026-11-22T11:00:00.000000000Z#" + s},
			schema.Raw:    &types.AttributeValueMemberB{Value: []byte(s)},
			schema.Reason: &types.AttributeValueMemberS{Value: "reason: " + s},
			schema.Origin: &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{
				"request_id": &types.AttributeValueMemberS{Value: s}, "index": &types.AttributeValueMemberN{Value: "3"}}},
		}
		body, err := json.Marshal(record(it))
		if err != nil {
			t.Fatal(err)
		}
		if got, want := recordSize(it), inPayload(t, body)+1; got != want {
			t.Errorf("%q: recordSize %d, want %d", s, got, want)
		}
	}
}

// FuzzPayloadLen: payloadLen counts what the two encoders write, for an
// event's JSON and for any JSON that json.Marshal wrote.
func FuzzPayloadLen(f *testing.F) {
	for _, s := range sizeSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ev := storedEvent(s)
		if got, want := payloadLen(ev), eventPayload(t, ev); got != want {
			t.Fatalf("event %q: payloadLen %d, want %d", ev, got, want)
		}
		body, _ := json.Marshal(map[string]string{"s": s})
		if got, want := payloadLen(body), inPayload(t, body); got != want {
			t.Fatalf("body %q: payloadLen %d, want %d", body, got, want)
		}
	})
}
