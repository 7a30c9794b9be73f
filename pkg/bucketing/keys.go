package bucketing

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Layouts of the time fields in keys. All are UTC and fixed width, so string
// order is time order.
const (
	// TimeLayout is the sort key's time: nanosecond precision, always 30 bytes.
	TimeLayout = "2006-01-02T15:04:05.000000000Z"
	// DayLayout is the base table's daily bucket.
	DayLayout = "2006-01-02"
	// HourLayout is the GSI's hourly bucket (DayLayout its daily one, on a
	// day whose schedule says DayBucket).
	HourLayout = "2006-01-02T15"
)

// Space is the first byte of a partition key: which key space it belongs to.
type Space byte

// The key spaces of the table.
const (
	Events     Space = 'E' // ingested events, keyed by source, day and shard
	Quarantine Space = 'Q' // records that could not be ingested, keyed by day and shard
	Meta       Space = 'M' // shard-count records, one per (space, source, day)
	GSI        Space = 'G' // the GSI partition key of events
)

// ErrKey is wrapped by every key-parsing error.
var ErrKey = errors.New("bucketing: malformed key")

// FormatTime renders t (in UTC) as the fixed-width time of a sort key.
func FormatTime(t time.Time) string { return string(AppendTime(nil, t)) }

// AppendTime appends FormatTime(t) to dst. The Append functions build keys
// without allocating, for the ingest hot path; each string function is its
// Append function on a fresh buffer, so the two cannot disagree.
func AppendTime(dst []byte, t time.Time) []byte { return t.UTC().AppendFormat(dst, TimeLayout) }

// ParseTime parses a time written by FormatTime.
func ParseTime(s string) (time.Time, error) {
	if len(s) != len(TimeLayout) {
		return time.Time{}, fmt.Errorf("%w: time %q is not %d bytes", ErrKey, s, len(TimeLayout))
	}
	t, err := time.Parse(TimeLayout, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%w: time %q: %v", ErrKey, s, err)
	}
	return t, nil
}

// Day is the UTC day bucket of t.
func Day(t time.Time) string { return t.UTC().Format(DayLayout) }

// Hour is the UTC hour bucket of t.
func Hour(t time.Time) string { return t.UTC().Format(HourLayout) }

// appendEscaped appends Escape(s).
func appendEscaped(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '%':
			dst = append(dst, "%25"...)
		case '#':
			dst = append(dst, "%23"...)
		default:
			dst = append(dst, c)
		}
	}
	return dst
}

// Escape makes s safe to embed in a '#'-delimited partition key: '%' becomes
// "%25" and '#' becomes "%23"; every other byte is kept. It is injective and
// its result holds no '#'.
func Escape(s string) string {
	n := strings.Count(s, "%") + strings.Count(s, "#")
	if n == 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 2*n)
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '%':
			b.WriteString("%25")
		case '#':
			b.WriteString("%23")
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// Unescape reverses Escape. It rejects any string Escape cannot produce.
func Unescape(s string) (string, error) {
	if !strings.ContainsAny(s, "%#") {
		return s, nil
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '#':
			return "", fmt.Errorf("%w: unescaped '#' in %q", ErrKey, s)
		case c != '%':
			b.WriteByte(c)
		case strings.HasPrefix(s[i:], "%25"):
			b.WriteByte('%')
			i += 2
		case strings.HasPrefix(s[i:], "%23"):
			b.WriteByte('#')
			i += 2
		default:
			return "", fmt.Errorf("%w: bad escape in %q", ErrKey, s)
		}
	}
	return b.String(), nil
}

// Stream names one sequence of records in the table: the events of one
// source, or the quarantine (whose Source is empty).
type Stream struct {
	Space  Space  // Events or Quarantine
	Source string // the event source; empty for Quarantine
}

// appendPrefix appends the partition key up to, not including, the day.
func (s Stream) appendPrefix(dst []byte) []byte {
	if s.Space == Quarantine {
		return append(dst, "Q#"...)
	}
	dst = append(dst, byte(s.Space), '#')
	return append(appendEscaped(dst, s.Source), '#')
}

// PK is the base-table partition key of the stream's records on day (a
// DayLayout string) in the given shard.
func (s Stream) PK(day string, shard int) string {
	return string(strconv.AppendInt(append(append(s.appendPrefix(nil), day...), '#'), int64(shard), 10))
}

// AppendPK appends the partition key of the stream's records at time t (its
// UTC day) in the given shard: PK(Day(t), shard).
func (s Stream) AppendPK(dst []byte, t time.Time, shard int) []byte {
	dst = t.UTC().AppendFormat(s.appendPrefix(dst), DayLayout)
	return strconv.AppendInt(append(dst, '#'), int64(shard), 10)
}

// MetaPK is the partition key of the record that holds the stream's shard
// counts for day.
func (s Stream) MetaPK(day string) string {
	return string(append(s.appendPrefix([]byte("M#")), day...))
}

// PartitionKey is a decoded base-table partition key.
type PartitionKey struct {
	Stream
	Day   string
	Shard int
}

// String encodes k; it is the same as k.Stream.PK(k.Day, k.Shard).
func (k PartitionKey) String() string { return k.Stream.PK(k.Day, k.Shard) }

// ParsePK decodes a partition key of the Events or Quarantine space.
func ParsePK(s string) (PartitionKey, error) {
	parts := strings.Split(s, "#")
	var k PartitionKey
	switch {
	case len(parts) == 4 && parts[0] == "E":
		src, err := Unescape(parts[1])
		if err != nil {
			return k, err
		}
		if src == "" {
			return k, fmt.Errorf("%w: empty source in %q", ErrKey, s)
		}
		k.Stream = Stream{Space: Events, Source: src}
		parts = parts[2:]
	case len(parts) == 3 && parts[0] == "Q":
		k.Stream = Stream{Space: Quarantine}
		parts = parts[1:]
	default:
		return k, fmt.Errorf("%w: %q is not an event or quarantine partition key", ErrKey, s)
	}
	if _, err := time.Parse(DayLayout, parts[0]); err != nil {
		return k, fmt.Errorf("%w: day in %q: %v", ErrKey, s, err)
	}
	k.Day = parts[0]
	n, err := parseShard(parts[1])
	if err != nil {
		return k, fmt.Errorf("%w: shard in %q: %v", ErrKey, s, err)
	}
	k.Shard = n
	if k.String() != s { // rejects non-canonical spellings such as "007"
		return k, fmt.Errorf("%w: %q is not canonical", ErrKey, s)
	}
	return k, nil
}

// GSIPK is the GSI partition key of source's events in the time bucket
// (an HourLayout string, or a DayLayout string on a day whose schedule
// says DayBucket) and GSI shard.
func GSIPK(source, bucket string, gsiShard int) string {
	dst := append(appendEscaped([]byte("G#"), source), '#')
	return string(strconv.AppendInt(append(append(dst, bucket...), '#'), int64(gsiShard), 10))
}

// GSIBucket is the GSI time bucket of t: its UTC day when daily, else its
// UTC hour.
func GSIBucket(t time.Time, daily bool) string { return t.UTC().Format(gsiLayout(daily)) }

// gsiLayout is the layout of a GSI time bucket.
func gsiLayout(daily bool) string {
	if daily {
		return DayLayout
	}
	return HourLayout
}

// AppendGSIPK appends the GSI partition key of source's events at time t:
// GSIPK(source, GSIBucket(t, daily), gsiShard).
func AppendGSIPK(dst []byte, source string, t time.Time, daily bool, gsiShard int) []byte {
	dst = append(appendEscaped(append(dst, "G#"...), source), '#')
	dst = t.UTC().AppendFormat(dst, gsiLayout(daily))
	return strconv.AppendInt(append(dst, '#'), int64(gsiShard), 10)
}

// GSIKey is a decoded GSI partition key.
type GSIKey struct {
	Source string
	Bucket string // an HourLayout string, or a DayLayout string for a day bucket
	Shard  int
}

// String encodes k.
func (k GSIKey) String() string { return GSIPK(k.Source, k.Bucket, k.Shard) }

// ParseGSIPK decodes a GSI partition key.
func ParseGSIPK(s string) (GSIKey, error) {
	var k GSIKey
	parts := strings.Split(s, "#")
	if len(parts) != 4 || parts[0] != "G" {
		return k, fmt.Errorf("%w: %q is not a GSI partition key", ErrKey, s)
	}
	src, err := Unescape(parts[1])
	if err != nil {
		return k, err
	}
	if src == "" {
		return k, fmt.Errorf("%w: empty source in %q", ErrKey, s)
	}
	if _, err := time.Parse(HourLayout, parts[2]); err != nil {
		if _, derr := time.Parse(DayLayout, parts[2]); derr != nil {
			return k, fmt.Errorf("%w: time bucket in %q: %v", ErrKey, s, err)
		}
	}
	n, err := parseShard(parts[3])
	if err != nil {
		return k, fmt.Errorf("%w: shard in %q: %v", ErrKey, s, err)
	}
	k = GSIKey{Source: src, Bucket: parts[2], Shard: n}
	if k.String() != s {
		return k, fmt.Errorf("%w: %q is not canonical", ErrKey, s)
	}
	return k, nil
}

func parseShard(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || n >= MaxShards {
		return 0, fmt.Errorf("%q is not a shard number in [0, %d)", s, MaxShards)
	}
	return n, nil
}

// SortKey is the sort key of a record at time t with the given id (an event
// id, or a quarantine record's origin). The time has a fixed width, so the id
// needs no escaping and string order is (time, id bytewise) order.
func SortKey(t time.Time, id string) string {
	return string(AppendSortKey(nil, t, id))
}

// AppendSortKey appends SortKey(t, id).
func AppendSortKey(dst []byte, t time.Time, id string) []byte {
	return append(append(AppendTime(dst, t), '#'), id...)
}

// ParseSortKey splits a sort key back into its time and id.
func ParseSortKey(s string) (time.Time, string, error) {
	n := len(TimeLayout)
	if len(s) < n+1 || s[n] != '#' {
		return time.Time{}, "", fmt.Errorf("%w: %q is not a sort key", ErrKey, s)
	}
	t, err := ParseTime(s[:n])
	if err != nil {
		return time.Time{}, "", err
	}
	return t, s[n+1:], nil
}
