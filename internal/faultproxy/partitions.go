package faultproxy

import (
	"encoding/json"
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// Partitions models DynamoDB's per-partition-key write ceiling: each value
// of each key attribute (the table's partition key, a GSI's partition key)
// takes at most WCU write units a second, with a second's worth of burst.
// A BatchWriteItem item whose write would take any of its keys over the
// ceiling is left unprocessed, and the others are written, as DynamoDB does:
// only the items over the limit are throttled. A GSI over its ceiling
// throttles the table write too (GSI back-pressure).
//
// Now is the model's clock. A test compresses time by running it faster
// than the wall clock and scaling WCU down by the same factor as its
// traffic, so that a ramp to 20,000 events a second plays out on DynamoDB
// Local in a minute.
type Partitions struct {
	WCU   float64          // write units a second per key value
	Burst float64          // seconds of WCU a quiet key saves up; default 1
	Keys  []string         // partition key attributes, such as "pk" and "gpk"
	Now   func() time.Time // default time.Now

	// Seen and Throttled count the items the model judged, and those it
	// held back.
	Seen, Throttled atomic.Int64

	mu      sync.Mutex
	buckets map[string]*bucket
	refused map[string]int // items refused per key value
}

type bucket struct {
	tokens float64
	at     time.Time
}

// Rule is the model as a proxy Rule. It holds back the items over the
// ceiling of BatchWriteItem requests and forwards everything else.
func (m *Partitions) Rule() Rule {
	return func(req Request) (*Fault, Hold) {
		if req.Op != "BatchWriteItem" {
			return nil, nil
		}
		return nil, m.take
	}
}

// take charges item's write units to each of its keys and reports whether
// it must be held back: an item is written only if every key it touches has
// the units, and then pays on all of them.
func (m *Partitions) take(item map[string]json.RawMessage) bool {
	now := time.Now()
	if m.Now != nil {
		now = m.Now()
	}
	units := wcu(item)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.buckets == nil {
		m.buckets = map[string]*bucket{}
		m.refused = map[string]int{}
	}
	var bs []*bucket
	ok := true
	for _, attr := range m.Keys {
		var v struct{ S string }
		if json.Unmarshal(item[attr], &v) != nil || v.S == "" {
			continue
		}
		name := attr + "=" + v.S
		b := m.buckets[name]
		if b == nil {
			b = &bucket{tokens: m.WCU * m.burst(), at: now}
			m.buckets[name] = b
		}
		if dt := now.Sub(b.at).Seconds(); dt > 0 {
			b.tokens = math.Min(m.WCU*m.burst(), b.tokens+dt*m.WCU)
			b.at = now
		}
		if b.tokens < units {
			ok = false
			m.refused[name]++
		}
		bs = append(bs, b)
	}
	m.Seen.Add(1)
	if ok {
		for _, b := range bs {
			b.tokens -= units
		}
	} else {
		m.Throttled.Add(1)
	}
	return !ok
}

func (m *Partitions) burst() float64 {
	if m.Burst > 0 {
		return m.Burst
	}
	return 1
}

// Hot is the key values that were over their ceiling at least once, with
// how many items each refused.
func (m *Partitions) Hot() map[string]int {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string]int{}
	for k, n := range m.refused {
		out[k] = n
	}
	return out
}

// wcu is what writing item costs: a unit per kilobyte or part of one, the
// item's size being its attribute names and values, as DynamoDB counts it
// for strings and numbers.
func wcu(item map[string]json.RawMessage) float64 {
	size := 0
	for name, raw := range item {
		size += len(name)
		var v map[string]string
		if json.Unmarshal(raw, &v) == nil {
			for _, s := range v {
				size += len(s)
			}
		} else {
			size += len(raw)
		}
	}
	return math.Max(1, math.Ceil(float64(size)/1024))
}
