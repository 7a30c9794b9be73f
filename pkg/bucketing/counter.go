package bucketing

import (
	"fmt"
	"strings"
)

// Counter is the key space of the event counters: one partition per source,
// one item per UTC hour (sort key HourLayout) holding that hour's counts by
// minute and type.
const Counter Space = 'C'

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
