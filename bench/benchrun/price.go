package benchrun

import "github.com/shardline/shardline/internal/item"

// readUnitBytes is what a (strongly consistent) read unit reads; a write
// unit writes a KB (item.WriteUnits).
const readUnitBytes = 4096

// writeUnits prices one write as DynamoDB does: the larger of the item's
// size before and after, in whole KB, at least one.
func writeUnits(before, after int) int { return item.WriteUnits(max(before, after)) }

// readUnits prices one Query page of the given bytes: the items' sizes
// summed and rounded up to 4 KB, halved when eventually consistent.
func readUnits(bytes int, consistent bool) float64 {
	units := float64(max(1, (bytes+readUnitBytes-1)/readUnitBytes))
	if !consistent {
		units /= 2
	}
	return units
}
