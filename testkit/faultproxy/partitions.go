package faultproxy

import (
	"encoding/json"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shardline/shardline/pkg/bucketing"
)

// Partitions models DynamoDB's per-partition-key write ceiling: each value
// of each key attribute (the table's partition key, a GSI's partition key)
// takes at most WCU write units a second, with Burst seconds' worth saved
// up. It meters every write DynamoDB meters and answers as DynamoDB does:
//
//   - BatchWriteItem: a put or delete whose write would take any of its
//     keys over the ceiling is left unprocessed and the others are
//     written; when none can be written, the whole request is refused with
//     ProvisionedThroughputExceededException.
//   - PutItem, UpdateItem, DeleteItem: a write over the ceiling is refused
//     with ProvisionedThroughputExceededException.
//
// A GSI key over its ceiling throttles the table write too (GSI
// back-pressure). An item's write costs a unit per kilobyte or part of one
// (see itemBytes), on each of its keys.
//
// What a single-item write costs is settled from DynamoDB's own answer:
// the proxy asks for the consumed capacity, which DynamoDB (and DynamoDB
// Local) bills for an UpdateItem or a replacing PutItem at the larger of
// the item before and after, and for a DeleteItem at the deleted item's
// size. The model admits the write on an estimate first (a PutItem's new
// item; an UpdateItem's or DeleteItem's last settled cost of that key, or
// one unit) and charges the difference when the answer comes. It charges
// the table's units to the partition key of the item (PutItem) or of the
// Key (UpdateItem, DeleteItem): it cannot see which GSI entry an update or
// delete changes, and shardline only ever changes an item with a GSI key
// in a BatchWriteItem. A refused conditional write is charged its
// estimate, as DynamoDB charges it. TransactWriteItems is not metered:
// shardline does not use it.
//
// A write larger than a full bucket is admitted when the bucket is full
// and leaves it in debt, so that a small scaled ceiling (WCU 10 for a
// model 100 times smaller than life) still takes a 12-unit item, as
// DynamoDB's 1,000 does.
//
// Now is the model's clock. A test compresses time by running it faster
// than the wall clock and scaling the ceiling down by the same factor as
// its traffic (Scale), so that a ramp to 20,000 events a second plays out
// on DynamoDB Local in a minute.
//
// Report says, per key space, which key values were refused and the most
// write units any key value took in one second of the model's clock.
type Partitions struct {
	// WCU is the write units a second one key value takes. Zero means
	// bucketing.PartitionWCU / Scale.
	WCU float64
	// Scale is how many times smaller than life the test's traffic is;
	// it sets WCU when WCU is zero. Zero means 1.
	Scale float64
	Burst float64          // seconds of WCU a quiet key saves up; default 1
	Keys  []string         // partition key attributes, such as "pk" and "gpk"
	Now   func() time.Time // default time.Now
	// Partition, when set, names the partition a key value ("attr=value")
	// is on: key values it names alike share one ceiling, as keys on a
	// partition DynamoDB has not split do. "" (and a nil Partition) is a
	// partition of the key's own, named as the key.
	Partition func(key string) string

	// Seen and Throttled count the writes the model judged (items of a
	// BatchWriteItem, single-item writes), and those it refused.
	Seen, Throttled atomic.Int64

	mu   sync.Mutex
	keys map[string]*keyState // by "attr=value"
	cost map[string]float64   // last settled cost of a single-item write, by its Key
}

// keyState is one key value's token bucket and what it took.
type keyState struct {
	tokens float64
	at     time.Time

	writes  int
	units   float64
	refused int
	peak    float64
	window  []charge // the charges of the last second, oldest first
	inWin   float64  // their sum
}

type charge struct {
	at    time.Time
	units float64
}

// Ceiling is the write units a second one key value takes.
func (m *Partitions) Ceiling() float64 {
	if m.WCU > 0 {
		return m.WCU
	}
	s := m.Scale
	if s <= 0 {
		s = 1
	}
	return bucketing.PartitionWCU / s
}

func (m *Partitions) capacity() float64 {
	b := m.Burst
	if b <= 0 {
		b = 1
	}
	return m.Ceiling() * b
}

func (m *Partitions) now() time.Time {
	if m.Now != nil {
		return m.Now()
	}
	return time.Now()
}

// Rule is the model as a proxy Rule.
func (m *Partitions) Rule() Rule {
	return func(req Request) (*Fault, Hold) {
		switch req.Op {
		case "BatchWriteItem":
			if req.meter != nil {
				req.meter.refuseWhole = true
			}
			return nil, m.take
		case "PutItem", "UpdateItem", "DeleteItem":
			return m.single(req), nil
		}
		return nil, nil
	}
}

// take charges an item's write units to each of its keys and reports
// whether it must be held back: an item is written only if every key it
// touches has the units, and then pays on all of them.
func (m *Partitions) take(item map[string]json.RawMessage) bool {
	now := m.now()
	units := writeUnits(item)
	m.mu.Lock()
	defer m.mu.Unlock()
	keys := m.keysOf(item)
	ok := m.admit(keys, units, now)
	m.Seen.Add(1)
	if !ok {
		m.Throttled.Add(1)
		return true
	}
	for _, k := range keys {
		k.tokens -= units
		k.charge(now, units)
	}
	return false
}

// single judges a PutItem, UpdateItem or DeleteItem: the fault to answer
// with, or nil after asking the proxy to settle the write's cost from
// DynamoDB's answer.
func (m *Partitions) single(req Request) *Fault {
	var in struct {
		Item map[string]json.RawMessage
		Key  map[string]json.RawMessage
	}
	if json.Unmarshal(req.Body, &in) != nil {
		return nil
	}
	attrs, id := in.Item, ""
	if attrs == nil {
		attrs, id = in.Key, keyID(in.Key)
	}
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	est := 1.0
	if in.Item != nil {
		est = writeUnits(in.Item)
	} else if c, ok := m.cost[id]; ok {
		est = c
	}
	keys := m.keysOf(attrs)
	m.Seen.Add(1)
	if !m.admit(keys, est, now) {
		m.Throttled.Add(1)
		return Throttled
	}
	for _, k := range keys {
		k.tokens -= est
	}
	if req.meter != nil {
		req.meter.consumed = func(status int, body []byte) { m.settle(keys, id, est, now, status, body) }
	}
	return nil
}

// settle charges a single-item write admitted at now on an estimate of est
// units what DynamoDB's answer says it consumed.
func (m *Partitions) settle(keys []*keyState, id string, est float64, now time.Time, status int, body []byte) {
	units := est
	switch {
	case status == 200:
		var out struct {
			ConsumedCapacity *struct {
				CapacityUnits float64
				Table         *struct{ CapacityUnits float64 }
			}
		}
		if json.Unmarshal(body, &out) == nil && out.ConsumedCapacity != nil {
			units = out.ConsumedCapacity.CapacityUnits
			if out.ConsumedCapacity.Table != nil {
				units = out.ConsumedCapacity.Table.CapacityUnits
			}
		}
	case !strings.Contains(string(body), "ConditionalCheckFailed"):
		units = 0 // not written and not billed
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, k := range keys {
		k.tokens -= units - est
		if units > 0 {
			k.charge(now, units)
		}
	}
	if id != "" && units > 0 {
		if m.cost == nil {
			m.cost = map[string]float64{}
		}
		m.cost[id] = units
	}
}

// keysOf is the state of every modelled key attrs carries. m.mu is held.
func (m *Partitions) keysOf(attrs map[string]json.RawMessage) []*keyState {
	if m.keys == nil {
		m.keys = map[string]*keyState{}
	}
	var out []*keyState
	for _, attr := range m.Keys {
		var v struct{ S string }
		if json.Unmarshal(attrs[attr], &v) != nil || v.S == "" {
			continue
		}
		name := attr + "=" + v.S
		if m.Partition != nil {
			if p := m.Partition(name); p != "" {
				name = p
			}
		}
		k := m.keys[name]
		if k == nil {
			k = &keyState{tokens: m.capacity()}
			m.keys[name] = k
		}
		if !slices.Contains(out, k) { // an item's two keys on one partition pay once
			out = append(out, k)
		}
	}
	return out
}

// admit refills keys to now and says whether each has the units (or, for
// a write larger than a full bucket, is full); a key that has not counts
// the refusal. m.mu is held.
func (m *Partitions) admit(keys []*keyState, units float64, now time.Time) bool {
	capacity := m.capacity()
	ok := true
	for _, k := range keys {
		if k.at.IsZero() {
			k.at = now
		}
		if dt := now.Sub(k.at).Seconds(); dt > 0 {
			k.tokens = math.Min(capacity, k.tokens+dt*m.Ceiling())
			k.at = now
		}
		if k.tokens < math.Min(units, capacity) {
			ok = false
			k.refused++
		}
	}
	return ok
}

// charge adds a write of units to the key's tally and its one-second
// window; the caller debits the bucket.
func (k *keyState) charge(at time.Time, units float64) {
	k.writes++
	k.units += units
	k.window = append(k.window, charge{at, units})
	k.inWin += units
	cut := at.Add(-time.Second)
	i := 0
	for i < len(k.window) && !k.window[i].at.After(cut) {
		k.inWin -= k.window[i].units
		i++
	}
	if i > 0 {
		k.window = append(k.window[:0], k.window[i:]...)
	}
	k.peak = math.Max(k.peak, k.inWin)
}

func keyID(key map[string]json.RawMessage) string {
	names := make([]string, 0, len(key))
	for n := range key {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, n := range names {
		b.WriteString(n)
		b.WriteByte(0)
		b.Write(key[n])
		b.WriteByte(0)
	}
	return b.String()
}
