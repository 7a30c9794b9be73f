// Package item turns events and quarantined records into DynamoDB items, and
// items back into them.
package item

import (
	"strconv"
	"strings"
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
// in effect at the event's time, retention how long the item lives. On a
// day without GSI copies (shards.NoGSICopy) the item has no GSI key, so
// DynamoDB writes no copy of it.
//
// Event runs once per ingested event, so it builds the three keys and the
// expiry in one string and the attribute values in one struct: four
// allocations an item (the string, the values, the map and its slots)
// instead of a dozen. Arena.Event shares the first two among many items.
func Event(e cloudevent.Event, shards bucketing.Step, retention time.Duration) Item {
	var a *Arena
	return a.Event(e, shards, retention)
}

// Arena backs the keys and attribute values of many event items with a
// few allocations of arenaBytes and arenaValues, rather than two for each
// item; the zero Arena is ready to use, and one serves a batch. An item
// kept after its batch keeps its arena chunks alive (a few KiB, a bound
// the chunk sizes set), which is what a batch trades for the allocations.
// An Arena must not be copied after first use (its strings.Builder
// panics if it is).
type Arena struct {
	keys strings.Builder // written only at its end: strings taken from it never change
	vals []eventValues
}

// Chunk sizes of an Arena: about 25 events' keys, and 32 events' values.
const (
	arenaBytes  = 4 << 10
	arenaValues = 32
)

// Event is item.Event with its keys and values taken from a; a nil a
// allocates them for the item alone.
func (a *Arena) Event(e cloudevent.Event, shards bucketing.Step, retention time.Duration) Item {
	h := bucketing.Hash(e.Source, e.ID)
	var scratch [256]byte // the keys of a usual event fit: built on the stack, copied once
	buf := scratch[:0]
	buf = bucketing.Stream{Space: bucketing.Events, Source: e.Source}.AppendPK(buf, e.Time, bucketing.Shard(h, shards.Shards))
	pkEnd := len(buf)
	buf = bucketing.AppendSortKey(buf, e.Time, e.ID)
	skEnd := len(buf)
	buf = bucketing.AppendGSIPK(buf, e.Source, e.Time, shards.DayBucket, bucketing.GSIShard(h, shards.GSIShards))
	gpkEnd := len(buf)
	buf = strconv.AppendInt(buf, e.Time.Add(retention).Unix(), 10)
	keys := a.str(buf)
	pk, sk := keys[:pkEnd], keys[pkEnd:skEnd]

	v := a.values()
	v.s[0].Value, v.s[1].Value, v.s[2].Value = pk, sk, keys[skEnd:gpkEnd]
	v.s[3].Value, v.s[4].Value = e.JSON, e.Type
	v.ttl.Value = keys[gpkEnd:]
	attrs := make(map[string]types.AttributeValue, 7)
	attrs[schema.PK] = &v.s[0]
	attrs[schema.SK] = &v.s[1]
	if shards.Copied() { // else the GSI, sparse, holds no copy of it
		attrs[schema.GSIPK] = &v.s[2]
	}
	attrs[schema.Event] = &v.s[3]
	attrs[schema.Type] = &v.s[4]
	if e.Subject != "" {
		v.s[5].Value = e.Subject
		attrs[schema.Subject] = &v.s[5]
	}
	attrs[schema.TTL] = &v.ttl
	return Item{PK: pk, SK: sk, Attrs: attrs}
}

// eventValues holds an event item's attribute values, so that one
// allocation backs them all.
type eventValues struct {
	s   [6]types.AttributeValueMemberS
	ttl types.AttributeValueMemberN
}

// str is b as a string, copied to the end of a's current chunk. Bytes a
// strings.Builder has written never change, so the strings it returned
// stay valid as it grows or is replaced.
func (a *Arena) str(b []byte) string {
	if a == nil || len(b) > arenaBytes/4 {
		return string(b)
	}
	if a.keys.Cap()-a.keys.Len() < len(b) {
		a.keys = strings.Builder{}
		a.keys.Grow(arenaBytes)
	}
	start := a.keys.Len()
	a.keys.Write(b)
	return a.keys.String()[start:]
}

// values is a fresh eventValues, from a's current chunk.
func (a *Arena) values() *eventValues {
	if a == nil {
		return new(eventValues)
	}
	if len(a.vals) == 0 {
		a.vals = make([]eventValues, arenaValues)
	}
	v := &a.vals[0]
	a.vals = a.vals[1:]
	return v
}

func expiry(t time.Time, retention time.Duration) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(t.Add(retention).Unix(), 10)}
}
