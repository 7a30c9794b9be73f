package bucketing

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
)

// MaxShards bounds every shard count, base table or GSI. A query may fan out
// to this many partitions per day, so the bound keeps a scatter-gather sane.
const MaxShards = 1024

// Hash is the event's shard hash: FNV-1a over (len(source), source, id),
// finished with the MurmurHash3 64-bit finaliser so that every output bit
// depends on every input bit. Length-prefixing the source makes the pair
// unambiguous: ("a", "bc") and ("ab", "c") hash differently.
//
// Hash is part of the storage format: changing it would move every event to
// another shard, so retries would duplicate. A golden test pins it.
func Hash(source, id string) uint64 {
	const (
		offset = 14695981039346656037
		prime  = 1099511628211
	)
	h := uint64(offset)
	for n := uint64(len(source)); ; n >>= 7 { // uvarint of the length
		b := byte(n & 0x7f)
		if n >= 0x80 {
			b |= 0x80
		}
		h = (h ^ uint64(b)) * prime
		if n < 0x80 {
			break
		}
	}
	for i := 0; i < len(source); i++ {
		h = (h ^ uint64(source[i])) * prime
	}
	for i := 0; i < len(id); i++ {
		h = (h ^ uint64(id[i])) * prime
	}
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	return h
}

// Shard maps hash h to a base-table shard in [0, n), from the low 32 bits.
// n < 1 is treated as 1.
func Shard(h uint64, n int) int {
	if n <= 1 {
		return 0
	}
	return int((h & 0xffffffff) * uint64(n) >> 32)
}

// GSIShard maps hash h to a GSI shard in [0, n), from the high 32 bits, so
// that it is independent of the base-table shard.
func GSIShard(h uint64, n int) int {
	if n <= 1 {
		return 0
	}
	return int((h >> 32) * uint64(n) >> 32)
}

// Counts holds shard counts per source: a default, and overrides for hot
// sources.
type Counts struct {
	Default   int
	Overrides map[string]int
}

// For is the shard count configured for source.
func (c Counts) For(source string) int {
	if n, ok := c.Overrides[source]; ok {
		return n
	}
	return c.Default
}

// Validate reports a count outside [1, MaxShards].
func (c Counts) Validate() error {
	if c.Default < 1 || c.Default > MaxShards {
		return fmt.Errorf("default shard count %d is outside [1, %d]", c.Default, MaxShards)
	}
	for src, n := range c.Overrides {
		if n < 1 || n > MaxShards {
			return fmt.Errorf("shard count %d for source %q is outside [1, %d]", n, src, MaxShards)
		}
	}
	return nil
}

// ParseOverrides reads per-source shard counts written as a JSON object,
// {"source": count, ...}. JSON is used because a source may contain any
// character, commas and equals signs included. An empty string is no
// overrides.
func ParseOverrides(s string) (map[string]int, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var m map[string]int
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		return nil, fmt.Errorf(`shard overrides must be a JSON object of source to count, like {"orders": 16}: %w`, err)
	}
	for src, n := range m {
		if n < 1 || n > MaxShards {
			return nil, fmt.Errorf("shard count %d for source %q is outside [1, %d]", n, src, MaxShards)
		}
	}
	return m, nil
}

// Partition ceilings of DynamoDB, per partition key value in practice.
const (
	PartitionWCU = 1000 // write capacity units per second
	PartitionRCU = 3000 // read capacity units per second
)

// TargetUtilisation is the share of a partition's write ceiling that
// ShardsFor plans to use at peak.
const TargetUtilisation = 0.7

// ShardsFor is the shard count for a source that writes peak events per
// second of avgItemKB kilobytes each.
//
// Every write of an item costs ceil(size / 1 KB) write capacity units, and one
// partition key value takes at most PartitionWCU of them per second, whatever
// the table's capacity; that ceiling is the hot-partition problem. So a source
// needs at least peak × ceil(avgItemKB) / 1000 partition keys at once; that is
// the seed articles' formula. ShardsFor adds headroom by planning for
// TargetUtilisation of the ceiling rather than all of it: the hash spreads
// events evenly only on average, second-by-second load wobbles, adaptive
// capacity reacts late, and on-demand tables throttle above twice their
// previous peak. The same formula sizes the GSI shards, with the size of the
// projected GSI item.
//
// The result is at least 1 and at most MaxShards.
func ShardsFor(peak float64, avgItemKB float64) int {
	if peak <= 0 || math.IsNaN(peak) || math.IsNaN(avgItemKB) {
		return 1
	}
	wcuPerItem := math.Ceil(avgItemKB)
	if wcuPerItem < 1 {
		wcuPerItem = 1
	}
	n := math.Ceil(peak * wcuPerItem / (PartitionWCU * TargetUtilisation))
	switch {
	case n < 1:
		return 1
	case n > MaxShards:
		return MaxShards
	}
	return int(n)
}
