package archive

import (
	"encoding/hex"
	"hash/crc32"
	"strconv"
	"time"
)

// Prefix is the root of everything the archive keeps in its bucket: what
// the function may write, the readers' policy may read and the lifecycle
// rule tiers. Both layouts are under it.
const Prefix = "events/"

// LayoutPrefix is where the archive writes: the layout v2, partitioned by
// the source's bucket and the day, the Glue table events' location.
const LayoutPrefix = Prefix + "v2/"

// Buckets is how many buckets the sources are spread over. A batch puts at
// most one object per (bucket, UTC day) it holds, so at most 32 for a batch
// within one day, whatever its number of sources: at most one PUT per 100
// events for a batch of 3,200 records or more. A one-source, one-day
// Athena query reads its bucket's day: a 32nd of the day's archive.
// Changing it moves every source to another bucket: it is part of the
// layout, as the hash is.
const Buckets = 32

// Bucket is the bucket that holds source's events: the CRC-32 (IEEE, the
// checksum of gzip, zlib and Athena's crc32) of its UTF-8 bytes, mod
// Buckets. In Athena it is crc32(to_utf8(source)) % 32; docs/archive.md
// gives a shell and a Python line.
func Bucket(source string) int {
	return int(crc32.ChecksumIEEE([]byte(source)) % Buckets)
}

// BucketPartition spells bucket b as its partition value: two digits, as
// the Glue table's projection (digits 2) spells it.
func BucketPartition(b int) string {
	s := strconv.Itoa(b)
	if len(s) < 2 {
		s = "0" + s
	}
	return s
}

// The Glue tables the stack declares over the two layouts, which the
// command line's queries name.
const (
	Table   = "events"    // the layout v2, by bucket and day
	V1Table = "events_v1" // the layout v1, by source and day
)

// DayLayout spells the day partition, a UTC date.
const DayLayout = "2006-01-02"

// ObjectKey is the key of the object that holds a batch's events of
// source's bucket on day:
// events/v2/bucket=<NN>/day=<YYYY-MM-DD>/<batch>.json.gz. The sources of a
// bucket share it. batch names the delivery (its first stream record), so a
// batch delivered again rewrites its own objects instead of adding copies.
func ObjectKey(source string, day time.Time, batch string) string {
	return LayoutPrefix + "bucket=" + BucketPartition(Bucket(source)) + "/day=" + day.UTC().Format(DayLayout) + "/" + batchName(batch) + ".json.gz"
}

// V1Template is where the layout v1 kept a source's day, the Glue table
// events_v1's location template: one object per (source, day) per batch,
// written until the layout v2 (docs/archive.md, Migration). Nothing writes
// it any more.
const V1Template = Prefix + "src=${src}/day=${day}/"

// SourcePartition is the value of the layout v1's src partition that holds
// source's events. A plain source (ASCII letters, digits, '_', '-' and '.',
// not beginning with '.') is itself; any other is '.' followed by the hex
// of its bytes, so that no source could reach another's partition or break
// the key. No plain source begins with '.', so the two forms never meet.
func SourcePartition(source string) string {
	if plain(source) && source[0] != '.' {
		return source
	}
	return "." + hex.EncodeToString([]byte(source))
}

// plain says whether s is non-empty and only ASCII letters, digits, '_',
// '-' and '.': characters S3 keys and Athena's partition paths take as they
// are.
func plain(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}

// batchName is batch when it is plain, else its hex: stream record ids are
// plain, but a key must stay one path segment whatever they hold.
func batchName(batch string) string {
	if plain(batch) && batch[0] != '.' {
		return batch
	}
	return "." + hex.EncodeToString([]byte(batch))
}
