package bucketing

import (
	"fmt"
	"strings"
	"time"
)

// Catalog is the key space of the source catalogue: one partition per UTC
// day, one item per source that wrote an event that day.
const Catalog Space = 'S'

// CatalogPK is the partition key of the catalogue of day (a DayLayout
// string). Its items' sort key is the source itself, unescaped: a sort key is
// not delimited, and DynamoDB orders it bytewise, as the API lists sources.
func CatalogPK(day string) string { return "S#" + day }

// ParseCatalogPK decodes a catalogue partition key into its day.
func ParseCatalogPK(s string) (string, error) {
	day, ok := strings.CutPrefix(s, "S#")
	if !ok {
		return "", fmt.Errorf("%w: %q is not a catalogue partition key", ErrKey, s)
	}
	if _, err := time.Parse(DayLayout, day); err != nil || len(day) != len(DayLayout) {
		return "", fmt.Errorf("%w: day in %q", ErrKey, s)
	}
	return day, nil
}
