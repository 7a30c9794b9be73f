package item

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/shardline/shardline/internal/schema"
	"github.com/shardline/shardline/pkg/bucketing"
)

// Origin says where a quarantined record came from: a Kinesis record
// (StreamARN, ShardID, SequenceNumber) or an API request (RequestID).
// SubIndex is the user record's position in a KPL aggregate, when the
// Kinesis record was one; Index is the event's position in a JSON array,
// when the record (or user record) held one. Tenant is the tenant whose
// route or own stream it arrived on, empty for the /v1/... routes and the
// shared stream: a tenant's quarantine lists only its own.
type Origin struct {
	StreamARN      string `json:"stream_arn,omitempty"`
	ShardID        string `json:"shard_id,omitempty"`
	SequenceNumber string `json:"sequence_number,omitempty"`
	RequestID      string `json:"request_id,omitempty"`
	SubIndex       *int   `json:"sub_index,omitempty"`
	Index          *int   `json:"index,omitempty"`
	Tenant         string `json:"tenant,omitempty"`
}

// key is a stable, unique name for the origin, so that quarantining the same
// record twice (a Lambda retry) writes the same item. The sub-index is
// marked "#s" and the index "#": neither a stream ARN nor a request id
// holds '#', and an origin without a sub-index keeps the key it had before
// sub-indexes existed.
func (o Origin) key() string {
	var k string
	if o.SequenceNumber != "" {
		k = "k:" + o.ShardID + ":" + o.SequenceNumber + ":" + o.StreamARN
	} else {
		k = "a:" + o.RequestID
	}
	if o.SubIndex != nil {
		k += "#s" + strconv.Itoa(*o.SubIndex)
	}
	if o.Index != nil {
		k += "#" + strconv.Itoa(*o.Index)
	}
	return k
}

// Limits of a quarantine item. DynamoDB refuses an item over MaxItemBytes
// (names included), and a refused quarantine item would be retried
// forever: Quarantine keeps every item under it, whatever the record and
// the reason (docs/faults.md, "Review findings (issue 28): ingest").
const (
	// MaxItemBytes is DynamoDB's limit on an item's size: 400 KB.
	MaxItemBytes = 400 << 10
	// MaxRawBytes is the most raw bytes a quarantine item holds. A longer
	// record (a Kinesis record may be 1 MiB) is stored gzip-compressed
	// when that fits, and otherwise cut to its first bytes with its full
	// size and SHA-256 recorded: the one case where the quarantine cannot
	// keep every byte, because DynamoDB cannot.
	MaxRawBytes = 380_000
	// MaxReasonBytes bounds a quarantine item's reason. A reason quotes
	// what was sent, and quoting can make it several times the record (a
	// character U+0080 is 2 bytes, and 6 once %q escapes it); a longer one
	// is cut at a character and says how long it was.
	MaxReasonBytes = 2048
	// markRoom is left free for the mark a replay adds later: three
	// attributes, an outcome of at most 1,024 bytes among them.
	markRoom = 2048
)

// Rejected is a record that could not be ingested.
type Rejected struct {
	ReceivedAt time.Time
	Reason     string
	Raw        []byte
	Origin     Origin
}

// Quarantine is the item of a rejected record, in the quarantine key space.
// shards is the quarantine's shard step on the day received. The item is
// at most MaxItemBytes, whatever r holds (see MaxReasonBytes, MaxRawBytes).
func Quarantine(r Rejected, shards bucketing.Step, retention time.Duration) Item {
	id := r.Origin.key()
	pk := bucketing.Stream{Space: bucketing.Quarantine}.PK(bucketing.Day(r.ReceivedAt), bucketing.Shard(bucketing.Hash("", id), shards.Shards))
	sk := bucketing.SortKey(r.ReceivedAt, id)
	attrs := map[string]types.AttributeValue{
		schema.PK:     &types.AttributeValueMemberS{Value: pk},
		schema.SK:     &types.AttributeValueMemberS{Value: sk},
		schema.Reason: &types.AttributeValueMemberS{Value: cutReason(r.Reason)},
		schema.Origin: &types.AttributeValueMemberM{Value: originAttrs(r.Origin)},
		schema.TTL:    expiry(r.ReceivedAt, retention),
	}
	putRaw(attrs, r.Raw)
	return Item{PK: pk, SK: sk, Attrs: attrs}
}

// OriginTenant is the key, in a quarantine item's origin map, of the
// tenant the record arrived for (Origin.Tenant).
const OriginTenant = "tenant"

// originAttrs is o as the quarantine item's origin map.
func originAttrs(o Origin) map[string]types.AttributeValue {
	origin := map[string]types.AttributeValue{}
	put := func(k, v string) {
		if v != "" {
			origin[k] = &types.AttributeValueMemberS{Value: v}
		}
	}
	put("stream_arn", o.StreamARN)
	put("shard_id", o.ShardID)
	put("sequence_number", o.SequenceNumber)
	put("request_id", o.RequestID)
	put(OriginTenant, o.Tenant)
	if o.SubIndex != nil {
		origin["sub_index"] = &types.AttributeValueMemberN{Value: strconv.Itoa(*o.SubIndex)}
	}
	if o.Index != nil {
		origin["index"] = &types.AttributeValueMemberN{Value: strconv.Itoa(*o.Index)}
	}
	return origin
}

// cutReason is reason as a quarantine item keeps it: whole up to
// MaxReasonBytes; a longer one cut at a character, with a note of its full
// size, to MaxReasonBytes in all.
func cutReason(reason string) string {
	if len(reason) <= MaxReasonBytes {
		return reason
	}
	note := fmt.Sprintf("… (reason cut: %d bytes in all)", len(reason))
	cut := MaxReasonBytes - len(note)
	for cut > 0 && !utf8.RuneStart(reason[cut]) {
		cut--
	}
	return reason[:cut] + note
}

// putRaw adds raw to a quarantine item's attrs in the room the item has
// left under MaxItemBytes (less markRoom), and at most MaxRawBytes: whole
// when it fits, else with its size and gzip-compressed when that fits,
// else its first bytes with its size and SHA-256, so that an operator can
// tell it was cut and check a copy from the origin against it. A nil raw
// (an empty record) adds none.
func putRaw(attrs map[string]types.AttributeValue, raw []byte) {
	room := func(name string) int {
		return max(0, min(MaxRawBytes, MaxItemBytes-markRoom-Bytes(attrs)-len(name)))
	}
	if len(raw) <= room(schema.Raw) {
		if raw != nil {
			attrs[schema.Raw] = &types.AttributeValueMemberB{Value: raw}
		}
		return
	}
	attrs[schema.RawSize] = &types.AttributeValueMemberN{Value: strconv.Itoa(len(raw))}
	if gz := gzipped(raw); len(gz) <= room(schema.RawGzip) {
		attrs[schema.RawGzip] = &types.AttributeValueMemberB{Value: gz}
		return
	}
	sum := sha256.Sum256(raw)
	attrs[schema.RawSHA256] = &types.AttributeValueMemberS{Value: hex.EncodeToString(sum[:])}
	attrs[schema.Raw] = &types.AttributeValueMemberB{Value: raw[:room(schema.Raw)]}
}

func gzipped(b []byte) []byte {
	var buf bytes.Buffer
	w, _ := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	w.Write(b)
	w.Close()
	return buf.Bytes()
}

// RawOf is the raw bytes of a quarantine item as received, and whether they
// are whole (false when a record too large even compressed was truncated).
func RawOf(attrs map[string]types.AttributeValue) ([]byte, bool, error) {
	size := -1
	if n, ok := attrs[schema.RawSize].(*types.AttributeValueMemberN); ok {
		size, _ = strconv.Atoi(n.Value)
	}
	if gz, ok := attrs[schema.RawGzip].(*types.AttributeValueMemberB); ok {
		r, err := gzip.NewReader(bytes.NewReader(gz.Value))
		if err != nil {
			return nil, false, fmt.Errorf("quarantine item: %w", err)
		}
		b, err := io.ReadAll(io.LimitReader(r, int64(max(size, 0))+1))
		if err != nil {
			return nil, false, fmt.Errorf("quarantine item: %w", err)
		}
		return b, true, nil
	}
	raw := []byte{}
	if b, ok := attrs[schema.Raw].(*types.AttributeValueMemberB); ok && b.Value != nil {
		raw = b.Value
	}
	return raw, size < 0 || size == len(raw), nil
}
