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
	sums := map[tupleKey]int64{}
	for _, t := range ts {
		sums[tupleKey{t.Source, t.Minute.Unix() / 60, t.Type}] += t.N
	}
	keys := make([]tupleKey, 0, len(sums))
	types := map[string]int{}
	var names []string
	base := int64(-1)
	for k := range sums {
		keys = append(keys, k)
		if _, ok := types[k.typ]; !ok {
			types[k.typ] = 0
			names = append(names, k.typ)
		}
		if base < 0 || k.minute < base {
			base = k.minute
		}
	}
	sort.Strings(names)
	for i, n := range names {
		types[n] = i
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].less(keys[j]) })

	var raw []byte
	raw = binary.AppendUvarint(raw, uint64(len(names)))
	for _, n := range names {
		raw = appendString(raw, n)
	}
	var sources []string
	for i, k := range keys {
		if i == 0 || k.source != keys[i-1].source {
			sources = append(sources, k.source)
		}
	}
	raw = binary.AppendUvarint(raw, uint64(len(sources)))
	prev := ""
	for _, s := range sources {
		shared := commonPrefix(prev, s)
		raw = binary.AppendUvarint(raw, uint64(shared))
		raw = appendString(raw, s[shared:])
		prev = s
	}
	raw = binary.AppendUvarint(raw, uint64(max(base, 0)))
	for i := 0; i < len(keys); {
		j := i
		for j < len(keys) && keys[j].source == keys[i].source {
			j++
		}
		raw = binary.AppendUvarint(raw, uint64(j-i))
		for _, k := range keys[i:j] {
			raw = binary.AppendUvarint(raw, uint64(k.minute-base))
			raw = binary.AppendUvarint(raw, uint64(types[k.typ]))
			raw = binary.AppendUvarint(raw, uint64(sums[k]))
		}
		i = j
	}
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
