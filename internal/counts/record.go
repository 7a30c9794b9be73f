// Package counts keeps exact event counts per source, UTC minute and type,
// for GET /v1/counts. The counter function on the table's stream adds each
// newly inserted event to its stream shard's L0 chain — exactly once,
// however often the stream delivers it — the fold function folds the
// chains into packs and hour items, and a reader sums the levels, and the
// counter items of the previous release, into the buckets a chart asks
// for. docs/counts.md gives the argument. The previous release's
// per-source counter, which wrote those counter items, is in
// ops/sourcecounter: no function runs it.
package counts

import (
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/shardline/shardline/internal/item"
	"github.com/shardline/shardline/internal/schema"
	"github.com/shardline/shardline/pkg/bucketing"
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
// is one; exported for the previous release's counter (ops/sourcecounter).
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
// (ops/sourcecounter) named it.
func ShortID(s string, n int) string {
	h := sha256.Sum256([]byte(s))
	return base64.RawURLEncoding.EncodeToString(h[:n])
}

// ShardIDBytes is the size of a stream shard's id in a counter item, 9
// bytes (12 characters), which keeps the watermarks of the ~100 stream
// shards a hot source may touch under 2 KB.
const ShardIDBytes = 9

// Attribute names of a counter item, the previous release's per-source
// counter's (ops/sourcecounter), that LSM.Read and the chain's switch-over
// guard read.
const (
	CountPrefix    = "c" // c<mm><type id>: events of that type in minute mm
	TypePrefix     = "t" // t<type id>: the type the id stands for
	MarkPrefix     = "w" // w<shard id>: the last sequence number of that shard counted here
	OverflowPrefix = "o" // o<mm>: events of minute mm whose type the item does not keep (see MaxTypesPerItem)
)

// MaxTypesPerItem is the most types one counter item (one source's
// bucketing.CounterSlice, ten minutes) counts by name. The events of any
// further type in those minutes are still counted, exactly and once, in the
// item's overflow counters, one per minute, without their type;
// GET /v1/counts answers them in its "other" series. The cap is what keeps
// an item under DynamoDB's 400 KB whatever a producer puts in `type`: 100
// types of 256 bytes, each with a counter in every minute, and the
// watermarks of 144 stream shards make about 45 KB (docs/counts.md,
// "Overflow").
const MaxTypesPerItem = 100

// itemKey names a counter item.
type itemKey struct{ source, slice string }

// itemGroup is the records of one batch that go to one counter item, in
// sequence order.
type itemGroup struct {
	source, slice string
	recs          []record
}

func group(recs []record) []itemGroup {
	idx := map[[2]string]int{}
	var out []itemGroup
	for _, r := range recs {
		k := [2]string{r.source, bucketing.CounterSK(r.time)}
		i, ok := idx[k]
		if !ok {
			i = len(out)
			idx[k] = i
			out = append(out, itemGroup{source: k[0], slice: k[1]})
		}
		out[i].recs = append(out[i].recs, r)
	}
	for _, g := range out {
		sort.SliceStable(g.recs, func(i, j int) bool { return SeqLess(g.recs[i].seq, g.recs[j].seq) })
	}
	return out
}

// above is the records after watermark mark.
func above(recs []record, mark string) []record {
	var out []record
	for _, r := range recs {
		if SeqLess(mark, r.seq) {
			out = append(out, r)
		}
	}
	return out
}
