package bucketing

import (
	"fmt"
	"strings"
	"time"
)

// Counter is the key space of the event counters: one partition per source,
// one item per CounterSlice of a UTC hour (sort key CounterSK) holding that
// slice's counts by minute and type. Items written before slices hold a
// whole hour under the hour's HourLayout key; CounterSliceTime reads both.
const Counter Space = 'C'

// CounterSlice is the time one counter item holds: a sixth of an hour, so
// that the item a hot source updates is a sixth of the size it was, since
// an update is billed at the item's size and that item takes an update per
// stream shard and invocation (docs/keys.md).
const CounterSlice = 10 * time.Minute

// CounterSK is the sort key of the counter item that holds t: its hour,
// then the first minute of its slice, "2026-11-22T11:10". Keys sort by
// time, and an hour's slices sort after the hour's own key, which older
// items carry, and before the next hour's.
func CounterSK(t time.Time) string {
	t = t.UTC()
	m := t.Minute() / int(CounterSlice/time.Minute) * int(CounterSlice/time.Minute)
	return fmt.Sprintf("%s:%02d", t.Format(HourLayout), m)
}

// CounterSKRange is the range of sort keys, both ends included, of the
// counter items that can hold events of [from, to): from the hour of from,
// whose own key older items carry, to the last slice of the hour before to.
func CounterSKRange(from, to time.Time) (lo, hi string) {
	return Hour(from), Hour(to.Add(-time.Nanosecond)) + ";" // ';' sorts right after ':'
}

// CounterSliceTime is the hour a counter item's sort key belongs to, and
// the start of its slice: a CounterSK, or the HourLayout key of an item
// that holds a whole hour.
func CounterSliceTime(sk string) (hour, start time.Time, err error) {
	h, m, sliced := strings.Cut(sk, ":")
	hour, err = time.Parse(HourLayout, h)
	if err != nil {
		return hour, hour, fmt.Errorf("%w: counter sort key %q: %w", ErrKey, sk, err)
	}
	if !sliced {
		return hour, hour, nil
	}
	if len(m) != 2 || m[0] < '0' || m[0] > '5' || m[1] < '0' || m[1] > '9' {
		return hour, hour, fmt.Errorf("%w: counter sort key %q: want a minute 00-59 after the hour", ErrKey, sk)
	}
	n := int(m[0]-'0')*10 + int(m[1]-'0')
	if n%int(CounterSlice/time.Minute) != 0 {
		return hour, hour, fmt.Errorf("%w: counter sort key %q: a slice starts at a multiple of %v", ErrKey, sk, CounterSlice)
	}
	return hour, hour.Add(time.Duration(n) * time.Minute), nil
}

// CounterPK is the partition key of source's counters.
func CounterPK(source string) string { return string(appendEscaped([]byte("C#"), source)) }

// ParseCounterPK decodes a counter partition key into its source.
func ParseCounterPK(s string) (string, error) {
	esc, ok := strings.CutPrefix(s, "C#")
	if !ok || esc == "" {
		return "", fmt.Errorf("%w: %q is not a counter partition key", ErrKey, s)
	}
	return Unescape(esc)
}
