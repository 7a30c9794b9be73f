package faultproxy

import (
	"sort"
	"strings"
)

// KeyStats is what the partition model saw of one key value.
type KeyStats struct {
	Key     string  // "attr=value", such as "pk=S#2026-11-22#3"
	Writes  int     // writes charged to it
	Units   float64 // write units charged to it
	Peak    float64 // the most units it took within one second of the model's clock
	Refused int     // writes refused because it was over its ceiling
}

// SpaceStats is what the partition model saw of one key space: the key
// values of one attribute that share the prefix before their first '#'
// ("pk=M" for shard records and hour indexes, "pk=S" for the catalogue,
// "gpk=G" for the GSI).
type SpaceStats struct {
	Space   string
	Keys    int     // key values written or refused
	Writes  int     // writes charged
	Units   float64 // write units charged
	Refused int     // writes refused
	// Peak is the key value with the highest one-second peak.
	Peak KeyStats
	// Hot lists the key values refused at least once, most refused first.
	Hot []KeyStats
}

// SpaceOf is the key space of a key value: its attribute and the value's
// prefix before the first '#'.
func SpaceOf(key string) string {
	attr, value, _ := strings.Cut(key, "=")
	prefix, _, _ := strings.Cut(value, "#")
	return attr + "=" + prefix
}

// Report is what the model saw, per key space, sorted by space.
func (m *Partitions) Report() []SpaceStats {
	m.mu.Lock()
	defer m.mu.Unlock()
	by := map[string]*SpaceStats{}
	for name, k := range m.keys {
		sp := SpaceOf(name)
		s := by[sp]
		if s == nil {
			s = &SpaceStats{Space: sp}
			by[sp] = s
		}
		ks := KeyStats{Key: name, Writes: k.writes, Units: k.units, Peak: k.peak, Refused: k.refused}
		s.Keys++
		s.Writes += k.writes
		s.Units += k.units
		s.Refused += k.refused
		if ks.Peak > s.Peak.Peak || s.Peak.Key == "" || ks.Peak == s.Peak.Peak && ks.Key < s.Peak.Key {
			s.Peak = ks
		}
		if k.refused > 0 {
			s.Hot = append(s.Hot, ks)
		}
	}
	out := make([]SpaceStats, 0, len(by))
	for _, s := range by {
		sort.Slice(s.Hot, func(i, j int) bool {
			if s.Hot[i].Refused != s.Hot[j].Refused {
				return s.Hot[i].Refused > s.Hot[j].Refused
			}
			return s.Hot[i].Key < s.Hot[j].Key
		})
		out = append(out, *s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Space < out[j].Space })
	return out
}

// Space is Report's entry for space, zero when nothing was written there.
func (m *Partitions) Space(space string) SpaceStats {
	for _, s := range m.Report() {
		if s.Space == space {
			return s
		}
	}
	return SpaceStats{Space: space}
}

// Key is what the model saw of one key value ("attr=value").
func (m *Partitions) Key(key string) KeyStats {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := m.keys[key]
	if k == nil {
		return KeyStats{Key: key}
	}
	return KeyStats{Key: key, Writes: k.writes, Units: k.units, Peak: k.peak, Refused: k.refused}
}

// Hot is the key values that were over their ceiling at least once, with
// how many writes each refused.
func (m *Partitions) Hot() map[string]int {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string]int{}
	for name, k := range m.keys {
		if k.refused > 0 {
			out[name] = k.refused
		}
	}
	return out
}
