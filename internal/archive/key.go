package archive

import (
	"encoding/hex"
	"time"
)

// Prefix is where the archive keeps events in its bucket: the Glue table's
// location.
const Prefix = "events/"

// DayLayout spells the day partition, a UTC date.
const DayLayout = "2006-01-02"

// SourcePartition is the value of the src partition that holds source's
// events. A plain source (ASCII letters, digits, '_', '-' and '.', not
// beginning with '.') is itself, so that most Athena queries name the
// source as it is; any other is '.' followed by the hex of its bytes, so
// that no source, whatever characters it holds ('/', '#', '%', spaces,
// non-ASCII), can reach another's partition or break the key. No plain
// source begins with '.', so the two forms never meet.
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

// ObjectKey is the key of the object that holds a batch's events of source
// on day: events/src=<SourcePartition>/day=<YYYY-MM-DD>/<batch>.json.gz.
// batch names the delivery (its first stream record), so a batch delivered
// again rewrites its own objects instead of adding copies.
func ObjectKey(source string, day time.Time, batch string) string {
	return Prefix + "src=" + SourcePartition(source) + "/day=" + day.UTC().Format(DayLayout) + "/" + batchName(batch) + ".json.gz"
}

// batchName is batch when it is plain, else its hex: stream record ids are
// plain, but a key must stay one path segment whatever they hold.
func batchName(batch string) string {
	if plain(batch) && batch[0] != '.' {
		return batch
	}
	return "." + hex.EncodeToString([]byte(batch))
}
