// Package sourcecounter is the previous release's per-source counter: it
// adds a batch of stream records to one counter item per source and ten
// minutes, exactly once, under a watermark per stream shard
// (docs/counts.md). No Lambda function runs it since the switch-over to
// the L0 chain (internal/counts); it is kept for the operator's redrive of
// batches given up on before a stream shard's chain began (Counter.Redrive,
// from the notes NoteFailure wrote), and for the tests and benches that
// play that release. LSM.Read still reads the items it wrote; the format
// they share (attribute names, ids, sequence numbers) is internal/counts'.
package sourcecounter

import (
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/shardline/shardline/internal/counts"
	"github.com/shardline/shardline/internal/item"
	"github.com/shardline/shardline/internal/schema"
	"github.com/shardline/shardline/pkg/bucketing"
)

// record is one stream record that counts: an event that was inserted.
type record struct {
	seq    string // the stream sequence number, canonical decimal (counts.CanonicalSeq)
	source string
	time   time.Time
	typ    string
}

// parse reads the records that count: INSERTs of event items, as the
// chain does. Everything else (updates, removals by TTL, quarantine, shard
// records, counters) is skipped, as the mapping's filter would have
// skipped it. An event item that cannot be read is an error: it would
// otherwise go uncounted.
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
	seq, err := counts.CanonicalSeq(r.Change.SequenceNumber)
	if err != nil {
		return record{}, err
	}
	return record{seq: seq, source: ev.Source, time: ev.Time, typ: typ}, nil
}

// seqLess compares canonical sequence numbers.
func seqLess(a, b string) bool { return counts.SeqLess(a, b) }

// shortID names a type or a stream shard inside a counter item.
func shortID(s string, n int) string { return counts.ShortID(s, n) }

// Sizes of the ids: a type's id is 6 bytes (8 characters), widened to the
// whole hash in the one item where two types' short ids collide; a shard's
// is counts.ShardIDBytes.
const (
	typeIDBytes  = 6
	shardIDBytes = counts.ShardIDBytes
)

// Attribute names of a counter item: counts' (which LSM.Read and the
// chain's switch-over guard read), and the kept set, which only this
// counter reads.
const (
	countPrefix    = counts.CountPrefix
	typePrefix     = counts.TypePrefix
	markPrefix     = counts.MarkPrefix
	overflowPrefix = counts.OverflowPrefix
	keptAttr       = "k" // the string set of the ids of the types the item counts by name
)

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
		sort.SliceStable(g.recs, func(i, j int) bool { return seqLess(g.recs[i].seq, g.recs[j].seq) })
	}
	return out
}

// above is the records after watermark mark.
func above(recs []record, mark string) []record {
	var out []record
	for _, r := range recs {
		if seqLess(mark, r.seq) {
			out = append(out, r)
		}
	}
	return out
}

// bounds are the first and last sequence numbers of recs, canonical.
func bounds(recs []events.DynamoDBEventRecord) (first, last string, err error) {
	if len(recs) == 0 {
		return "", "", errors.New("no records")
	}
	if first, err = counts.CanonicalSeq(recs[0].Change.SequenceNumber); err != nil {
		return "", "", err
	}
	last, err = counts.CanonicalSeq(recs[len(recs)-1].Change.SequenceNumber)
	return first, last, err
}
