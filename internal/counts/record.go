// Package counts keeps exact event counts per source, UTC minute and type,
// for GET /v1/counts. A function on the table's stream adds each newly
// inserted event to the counter item of its source and ten minutes —
// exactly once, however often the stream delivers it — and a reader sums
// counter items into the buckets a chart asks for. docs/counts.md gives
// the argument.
package counts

import (
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/shardline/shardline/internal/item"
	"github.com/shardline/shardline/internal/schema"
)

// record is one stream record that counts: an event that was inserted.
type record struct {
	seq    string // the stream sequence number, canonical decimal
	source string
	time   time.Time
	typ    string
}

// maxSeqDigits is the most digits a DynamoDB number holds exactly; stream
// sequence numbers are far shorter.
const maxSeqDigits = 38

// parse reads the records that count: INSERTs of event items. Everything
// else (updates, removals by TTL, quarantine, shard records, counters) is
// skipped, as the mapping's filter would have skipped it. An event item that
// cannot be read is an error: it would otherwise go uncounted.
func parse(recs []events.DynamoDBEventRecord) (out []record, skipped int, err error) {
	for _, r := range recs {
		if !item.IsEventChange(r, "INSERT") {
			skipped++
			continue
		}
		rec, err := parseEvent(r)
		if err != nil {
			return nil, skipped, fmt.Errorf("stream record %s: %w", r.EventID, err)
		}
		out = append(out, rec)
	}
	return out, skipped, nil
}

func parseEvent(r events.DynamoDBEventRecord) (record, error) {
	ev, err := item.ChangedEvent(r)
	if err != nil {
		return record{}, err
	}
	typ, err := item.NewImageString(r, schema.Type)
	if err != nil {
		return record{}, err
	}
	seq, err := CanonicalSeq(r.Change.SequenceNumber)
	if err != nil {
		return record{}, err
	}
	return record{seq: seq, source: ev.Source, time: ev.Time, typ: typ}, nil
}

// CanonicalSeq strips a sequence number's leading zeros, so that numbers
// compare by length, then bytewise (SeqLess). A watermark in a counter item
// is one; exported for the previous release's counter, which is to leave
// this package.
func CanonicalSeq(s string) (string, error) {
	if s == "" || strings.Trim(s, "0123456789") != "" {
		return "", fmt.Errorf("sequence number %q is not a decimal number", s)
	}
	s = strings.TrimLeft(s, "0")
	if s == "" {
		s = "0"
	}
	if len(s) > maxSeqDigits {
		return "", fmt.Errorf("sequence number %q has more than %d digits", s, maxSeqDigits)
	}
	return s, nil
}

// SeqLess compares canonical sequence numbers (CanonicalSeq).
func SeqLess(a, b string) bool {
	if len(a) != len(b) {
		return len(a) < len(b)
	}
	return a < b
}

// ShortID names a type or a stream shard inside a counter item: the first n
// bytes of its SHA-256, in URL-safe base64. The chain's switch-over guard
// names a shard's watermark with it, as the previous release's counter
// named it.
func ShortID(s string, n int) string {
	h := sha256.Sum256([]byte(s))
	return base64.RawURLEncoding.EncodeToString(h[:n])
}

// Sizes of the ids: a type's id is 6 bytes (8 characters), widened to the
// whole hash in the one item where two types' short ids collide; a shard's
// id, ShardIDBytes, is 9 bytes (12 characters), which keeps the watermarks
// of the ~100 stream shards a hot source may touch under 2 KB.
const (
	typeIDBytes  = 6
	ShardIDBytes = 9
)

// Attribute names of a counter item, the previous release's per-source
// counter's. LSM.Read and the chain's switch-over guard read the exported
// ones; only the counter reads the kept set.
const (
	CountPrefix    = "c" // c<mm><type id>: events of that type in minute mm
	TypePrefix     = "t" // t<type id>: the type the id stands for
	MarkPrefix     = "w" // w<shard id>: the last sequence number of that shard counted here
	OverflowPrefix = "o" // o<mm>: events of minute mm whose type the item does not keep (see MaxTypesPerItem)
	keptAttr       = "k" // the string set of the ids of the types the item counts by name
)
