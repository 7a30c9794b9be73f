package counts

import (
	"bytes"
	"compress/flate"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sort"
	"time"
)

// Tuple is one count of a pack: N events of source Source and type Type
// whose time falls in Minute (a UTC minute).
type Tuple struct {
	Source string
	Minute time.Time
	Type   string
	N      int64
}

// packVersion is the first byte of a pack; a reader refuses any other.
const packVersion = 1

// A pack is the binary form of a set of tuples that L0 links (and, later,
// L1 packs) carry. Its floor is the quiet event's own tuple, so it spends
// few bytes on each (docs/counts.md, "The floor"): the version byte, then,
// deflated, the types once each, the sources once each (sorted and
// front-coded: a name is the bytes it shares with the one before, and the
// rest), the earliest minute, and per source its tuples as varints (the
// minute after the earliest, the type's index, the count).

// encodePack packs ts, which may hold a (source, minute, type) more than
// once (their counts add).
func encodePack(ts []Tuple) ([]byte, error) {
	sp := sumTuples(ts)
	raw := appendTypes(nil, sp.types)
	raw = appendSources(raw, sp.keys)
	raw = binary.AppendUvarint(raw, uint64(sp.base))
	raw = appendCounts(raw, sp)
	return deflate(raw)
}

// summed is tuples summed by key, sorted, with their types' indexes and
// the earliest minute.
type summed struct {
	keys  []tupleKey
	sums  map[tupleKey]int64
	types []string       // sorted
	index map[string]int // type -> its place in types
	base  int64          // the earliest minute, Unix minutes (0 when none)
}

func sumTuples(ts []Tuple) summed {
	sp := summed{sums: map[tupleKey]int64{}, index: map[string]int{}, base: -1}
	for _, t := range ts {
		sp.sums[tupleKey{t.Source, t.Minute.Unix() / 60, t.Type}] += t.N
	}
	for k := range sp.sums {
		sp.keys = append(sp.keys, k)
		if _, ok := sp.index[k.typ]; !ok {
			sp.index[k.typ] = 0
			sp.types = append(sp.types, k.typ)
		}
		if sp.base < 0 || k.minute < sp.base {
			sp.base = k.minute
		}
	}
	sp.base = max(sp.base, 0)
	sort.Strings(sp.types)
	for i, n := range sp.types {
		sp.index[n] = i
	}
	sort.Slice(sp.keys, func(i, j int) bool { return sp.keys[i].less(sp.keys[j]) })
	return sp
}

func appendTypes(b []byte, types []string) []byte {
	b = binary.AppendUvarint(b, uint64(len(types)))
	for _, n := range types {
		b = appendString(b, n)
	}
	return b
}

// appendSources writes the sources of keys (sorted), each once,
// front-coded.
func appendSources(b []byte, keys []tupleKey) []byte {
	var sources []string
	for i, k := range keys {
		if i == 0 || k.source != keys[i-1].source {
			sources = append(sources, k.source)
		}
	}
	b = binary.AppendUvarint(b, uint64(len(sources)))
	prev := ""
	for _, s := range sources {
		shared := commonPrefix(prev, s)
		b = binary.AppendUvarint(b, uint64(shared))
		b = appendString(b, s[shared:])
		prev = s
	}
	return b
}

// appendCounts writes, source by source, how many tuples it has and each
// one's minute after the base, type index and count.
func appendCounts(b []byte, sp summed) []byte {
	for i := 0; i < len(sp.keys); {
		j := i
		for j < len(sp.keys) && sp.keys[j].source == sp.keys[i].source {
			j++
		}
		b = binary.AppendUvarint(b, uint64(j-i))
		for _, k := range sp.keys[i:j] {
			b = binary.AppendUvarint(b, uint64(k.minute-sp.base))
			b = binary.AppendUvarint(b, uint64(sp.index[k.typ]))
			b = binary.AppendUvarint(b, uint64(sp.sums[k]))
		}
		i = j
	}
	return b
}

// deflate is the pack's version byte and raw, deflated.
func deflate(raw []byte) ([]byte, error) {
	var out bytes.Buffer
	out.WriteByte(packVersion)
	w, err := flate.NewWriter(&out, flate.BestCompression)
	if err != nil {
		return nil, fmt.Errorf("pack: %w", err)
	}
	if _, err := w.Write(raw); err != nil {
		return nil, fmt.Errorf("pack: %w", err)
	}
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("pack: %w", err)
	}
	return out.Bytes(), nil
}

// maxPackRaw bounds what a pack may inflate to: a link is under 400 KB
// deflated, and no honest pack inflates past a few times that.
const maxPackRaw = 64 << 20

// decodePack reads a pack: its tuples, sorted by source, minute and type.
func decodePack(p []byte) ([]Tuple, error) {
	if len(p) == 0 || p[0] != packVersion {
		return nil, fmt.Errorf("pack: not a version %d pack", packVersion)
	}
	raw, err := io.ReadAll(io.LimitReader(flate.NewReader(bytes.NewReader(p[1:])), maxPackRaw+1))
	if err != nil {
		return nil, fmt.Errorf("pack: %w", err)
	}
	if len(raw) > maxPackRaw {
		return nil, errors.New("pack: inflates past its bound")
	}
	r := &packReader{b: raw}
	names := make([]string, r.count())
	for i := range names {
		names[i] = r.str()
	}
	sources := make([]string, r.count())
	prev := ""
	for i := range sources {
		shared := r.uint()
		if shared > uint64(len(prev)) {
			r.fail("a source shares more than the one before")
			break
		}
		sources[i] = prev[:shared] + r.str()
		prev = sources[i]
	}
	base := int64(r.uint())
	var out []Tuple
	for _, s := range sources {
		n := r.count()
		for range n {
			m, ti, c := r.uint(), r.uint(), r.uint()
			if ti >= uint64(len(names)) {
				r.fail("a type index past the types")
				break
			}
			out = append(out, Tuple{Source: s, Minute: time.Unix((base+int64(m))*60, 0).UTC(), Type: names[ti], N: int64(c)})
		}
	}
	if r.err == nil && len(r.b) > 0 {
		r.fail("bytes after the last tuple")
	}
	if r.err != nil {
		return nil, r.err
	}
	return out, nil
}

type tupleKey struct {
	source string
	minute int64
	typ    string
}

func (a tupleKey) less(b tupleKey) bool {
	if a.source != b.source {
		return a.source < b.source
	}
	if a.minute != b.minute {
		return a.minute < b.minute
	}
	return a.typ < b.typ
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func commonPrefix(a, b string) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

// packReader reads a pack's varints and strings; its first error sticks.
type packReader struct {
	b   []byte
	err error
}

func (r *packReader) fail(why string) {
	if r.err == nil {
		r.err = errors.New("pack: " + why)
	}
	r.b = nil
}

func (r *packReader) uint() uint64 {
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.fail("truncated")
		return 0
	}
	r.b = r.b[n:]
	return v
}

// count is a number of things to come, each at least a byte long.
func (r *packReader) count() int {
	v := r.uint()
	if v > uint64(len(r.b)) {
		r.fail("a count past the pack's end")
		return 0
	}
	return int(v)
}

func (r *packReader) str() string {
	n := r.uint()
	if n > uint64(len(r.b)) {
		r.fail("a string past the pack's end")
		return ""
	}
	s := string(r.b[:n])
	r.b = r.b[n:]
	return s
}
