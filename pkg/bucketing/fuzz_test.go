package bucketing

import (
	"testing"
	"time"
)

// FuzzKeys: decoding an encoded key gives back what was encoded, and two
// different (source, id) pairs never share a key.
func FuzzKeys(f *testing.F) {
	for _, s := range awkward {
		f.Add(s, "id", s, int64(0))
	}
	f.Add("a#b", "c", "a", int64(1))
	f.Fuzz(func(t *testing.T, src, id, other string, ns int64) {
		if src == "" {
			return
		}
		at := time.Unix(0, 0).UTC().Add(time.Duration(ns % int64(100*365*24*time.Hour)))
		if at.Year() < 1970 {
			at = at.AddDate(100, 0, 0)
		}
		s := Stream{Space: Events, Source: src}
		h := Hash(src, id)
		pk := s.PK(Day(at), Shard(h, 16))
		got, err := ParsePK(pk)
		if err != nil || got.Source != src || got.Day != Day(at) || got.Shard != Shard(h, 16) {
			t.Fatalf("ParsePK(%q) = %+v, %v", pk, got, err)
		}
		gt, gid, err := ParseSortKey(SortKey(at, id))
		if err != nil || gid != id || !gt.Equal(at) {
			t.Fatalf("ParseSortKey round trip of %q at %v: %v %q %v", id, at, gt, gid, err)
		}
		if other != "" && other != src && (Stream{Space: Events, Source: other}).PK(Day(at), 0) == s.PK(Day(at), 0) {
			t.Fatalf("sources %q and %q share a partition key", src, other)
		}
		// Parsing arbitrary strings never panics.
		_, _ = ParsePK(src)
		_, _ = ParseGSIPK(src)
		_, _, _ = ParseSortKey(id)
	})
}
