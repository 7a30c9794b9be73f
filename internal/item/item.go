// Package item turns events and quarantined records into DynamoDB items, and
// items back into them.
package item

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/shardline/shardline/internal/cloudevent"
	"github.com/shardline/shardline/internal/schema"
	"github.com/shardline/shardline/pkg/bucketing"
)

// Item is one DynamoDB item with its key spelled out, so that a writer can
// spot two writes of the same key without reading the attributes.
type Item struct {
	PK, SK string
	Attrs  map[string]types.AttributeValue
}

// Key identifies the item in the table.
func (it Item) Key() [2]string { return [2]string{it.PK, it.SK} }

// Event is the item of an event. shards is the step of the shard schedule
// in effect at the event's time, retention how long the item lives.
//
// Event runs once per ingested event, so it builds the three keys and the
// expiry in one buffer and the attribute values in one array: five
// allocations an item instead of a dozen.
func Event(e cloudevent.Event, shards bucketing.Step, retention time.Duration) Item {
	h := bucketing.Hash(e.Source, e.ID)
	buf := make([]byte, 0, 3*len(e.Source)+len(e.ID)+96)
	buf = bucketing.Stream{Space: bucketing.Events, Source: e.Source}.AppendPK(buf, e.Time, bucketing.Shard(h, shards.Shards))
	pkEnd := len(buf)
	buf = bucketing.AppendSortKey(buf, e.Time, e.ID)
	skEnd := len(buf)
	buf = bucketing.AppendGSIPK(buf, e.Source, e.Time, shards.DayBucket, bucketing.GSIShard(h, shards.GSIShards))
	gpkEnd := len(buf)
	buf = strconv.AppendInt(buf, e.Time.Add(retention).Unix(), 10)
	keys := string(buf)
	pk, sk := keys[:pkEnd], keys[pkEnd:skEnd]

	vals := new([6]types.AttributeValueMemberS)
	vals[0].Value, vals[1].Value, vals[2].Value = pk, sk, keys[skEnd:gpkEnd]
	vals[3].Value, vals[4].Value = e.JSON, e.Type
	attrs := make(map[string]types.AttributeValue, 7)
	attrs[schema.PK] = &vals[0]
	attrs[schema.SK] = &vals[1]
	attrs[schema.GSIPK] = &vals[2]
	attrs[schema.Event] = &vals[3]
	attrs[schema.Type] = &vals[4]
	if e.Subject != "" {
		vals[5].Value = e.Subject
		attrs[schema.Subject] = &vals[5]
	}
	attrs[schema.TTL] = &types.AttributeValueMemberN{Value: keys[gpkEnd:]}
	return Item{PK: pk, SK: sk, Attrs: attrs}
}

func expiry(t time.Time, retention time.Duration) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(t.Add(retention).Unix(), 10)}
}

// Origin says where a quarantined record came from: a Kinesis record
// (StreamARN, ShardID, SequenceNumber) or an API request (RequestID).
// SubIndex is the user record's position in a KPL aggregate, when the
// Kinesis record was one; Index is the event's position in a JSON array,
// when the record (or user record) held one.
type Origin struct {
	StreamARN      string `json:"stream_arn,omitempty"`
	ShardID        string `json:"shard_id,omitempty"`
	SequenceNumber string `json:"sequence_number,omitempty"`
	RequestID      string `json:"request_id,omitempty"`
	SubIndex       *int   `json:"sub_index,omitempty"`
	Index          *int   `json:"index,omitempty"`
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

// MaxRawBytes is the most raw bytes a quarantine item holds: what fits in a
// 400 KB item with its other attributes. A longer record (a Kinesis record
// may be 1 MiB) is stored gzip-compressed when that fits, and otherwise
// truncated to this prefix with its full size recorded: the one case where
// the quarantine cannot keep every byte, because DynamoDB cannot.
const MaxRawBytes = 380_000

// Rejected is a record that could not be ingested.
type Rejected struct {
	ReceivedAt time.Time
	Reason     string
	Raw        []byte
	Origin     Origin
}

// Quarantine is the item of a rejected record, in the quarantine key space.
// shards is the quarantine's shard step on the day received.
func Quarantine(r Rejected, shards bucketing.Step, retention time.Duration) Item {
	id := r.Origin.key()
	pk := bucketing.Stream{Space: bucketing.Quarantine}.PK(bucketing.Day(r.ReceivedAt), bucketing.Shard(bucketing.Hash("", id), shards.Shards))
	sk := bucketing.SortKey(r.ReceivedAt, id)
	raw := r.Raw
	origin := map[string]types.AttributeValue{}
	put := func(k, v string) {
		if v != "" {
			origin[k] = &types.AttributeValueMemberS{Value: v}
		}
	}
	put("stream_arn", r.Origin.StreamARN)
	put("shard_id", r.Origin.ShardID)
	put("sequence_number", r.Origin.SequenceNumber)
	put("request_id", r.Origin.RequestID)
	if r.Origin.SubIndex != nil {
		origin["sub_index"] = &types.AttributeValueMemberN{Value: strconv.Itoa(*r.Origin.SubIndex)}
	}
	if r.Origin.Index != nil {
		origin["index"] = &types.AttributeValueMemberN{Value: strconv.Itoa(*r.Origin.Index)}
	}
	attrs := map[string]types.AttributeValue{
		schema.PK:     &types.AttributeValueMemberS{Value: pk},
		schema.SK:     &types.AttributeValueMemberS{Value: sk},
		schema.Reason: &types.AttributeValueMemberS{Value: r.Reason},
		schema.Origin: &types.AttributeValueMemberM{Value: origin},
		schema.TTL:    expiry(r.ReceivedAt, retention),
	}
	if len(raw) > MaxRawBytes {
		attrs[schema.RawSize] = &types.AttributeValueMemberN{Value: strconv.Itoa(len(raw))}
		if gz := gzipped(raw); len(gz) <= MaxRawBytes {
			attrs[schema.RawGzip] = &types.AttributeValueMemberB{Value: gz}
			raw = nil
		} else {
			raw = raw[:MaxRawBytes]
		}
	}
	if raw != nil {
		attrs[schema.Raw] = &types.AttributeValueMemberB{Value: raw}
	}
	return Item{PK: pk, SK: sk, Attrs: attrs}
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

// StoredEvent is the JSON of an event read back from an item.
func StoredEvent(attrs map[string]types.AttributeValue) (json.RawMessage, error) {
	v, ok := attrs[schema.Event].(*types.AttributeValueMemberS)
	if !ok {
		return nil, fmt.Errorf("item %v has no %q attribute", attrs[schema.PK], schema.Event)
	}
	return json.RawMessage(v.Value), nil
}
