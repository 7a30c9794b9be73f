package bucketing

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Catalog is the key space of the source catalogue: CatalogShards
// partitions per UTC day, one item per source that wrote an event that
// day, in the partition its hash picks (CatalogShard).
const Catalog Space = 'S'

// CatalogShards is how many partitions a day's catalogue is spread over.
// Every source writes its day's entry once, at the start of its day, so at
// midnight every source writes the catalogue within seconds: one key per
// day would take them all (100,000 sources starting a day within a minute
// is 1,700 writes a second, above a partition's 1,000). Spread over 16,
// each key takes about 105 a second, a tenth of the ceiling
// (docs/keys.md). Readers read every shard of a day, so the number may
// change between releases only if readers read the old and the new ones.
const CatalogShards = 16

// CatalogPK is the partition key of shard (of CatalogShards) of the
// catalogue of day (a DayLayout string). Its items' sort key is the source
// itself, unescaped: a sort key is not delimited, and DynamoDB orders it
// bytewise, as the API lists sources.
func CatalogPK(day string, shard int) string {
	return "S#" + day + "#" + strconv.Itoa(shard)
}

// CatalogShard is the catalogue shard of source: a function of the source
// alone, so that writing a source's entry again rewrites the same item.
func CatalogShard(source string) int { return Shard(Hash(source, ""), CatalogShards) }

// LegacyCatalogPK is the one partition per day the catalogue had before it
// was spread (releases before the sharded catalogue wrote here). Nothing
// writes it now; readers still read it, so that the days written before
// the upgrade, and by containers of the old code during it, stay listed.
func LegacyCatalogPK(day string) string { return "S#" + day }

// ParseCatalogPK decodes a catalogue partition key into its day and shard;
// shard is -1 for a LegacyCatalogPK.
func ParseCatalogPK(s string) (day string, shard int, err error) {
	rest, ok := strings.CutPrefix(s, "S#")
	if !ok {
		return "", 0, fmt.Errorf("%w: %q is not a catalogue partition key", ErrKey, s)
	}
	day, num, sharded := strings.Cut(rest, "#")
	if _, err := time.Parse(DayLayout, day); err != nil || len(day) != len(DayLayout) {
		return "", 0, fmt.Errorf("%w: day in %q", ErrKey, s)
	}
	if !sharded {
		return day, -1, nil
	}
	n, err := strconv.Atoi(num)
	if err != nil || n < 0 || n >= CatalogShards || CatalogPK(day, n) != s {
		return "", 0, fmt.Errorf("%w: catalogue shard in %q", ErrKey, s)
	}
	return day, n, nil
}
