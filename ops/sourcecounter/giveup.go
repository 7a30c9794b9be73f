package sourcecounter

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/shardline/shardline/internal/counts"
	"github.com/shardline/shardline/internal/item"
	"github.com/shardline/shardline/internal/schema"
	"github.com/shardline/shardline/pkg/bucketing"
)

// A batch that Lambda gives up on (docs/counts.md, "Batches given up on")
// may have been counted in part: its items are updated one by one, and an
// invocation that fails has updated some. Once Lambda moves on, the next
// batches move the items' watermarks past the given-up records, so that the
// watermarks no longer tell which of them were counted. So after each
// failed invocation the counter writes a note: which of the batch's counter
// items were not brought up to the batch's records, and their watermarks
// then. The note of the last failed attempt is the state the batch was
// given up in, and Redrive counts exactly what it says is missing.
//
// Notes live in the counter key space, under a partition key no source's
// counters can have (an escaped source holds no '#'): C##gaveup#<shard id>,
// sorted by the batch's first sequence number. They are written only when
// an invocation fails, and expire with the counters.
const notePrefix = "C##gaveup#"

// Attributes of a note.
const (
	noteShard = "shard" // the stream shard id, whole
	noteEnd   = "end"   // the batch's last sequence number
	noteItems = "items" // the counter items not brought up to the batch: src, hr, and w (their watermark then) or u (unknown)
)

// maxNoteBytes keeps a note well inside an item's 400 KB; a batch whose
// note would not fit gets none, and Redrive falls back to the watermarks.
const maxNoteBytes = 300 << 10

func notePK(shardID string) string { return notePrefix + shortID(shardID, shardIDBytes) }

// pending is one counter item of a batch that was not brought up to it.
type pending struct {
	source, slice string
	mark          *string // its watermark when the note was written; nil: none
	unknown       bool    // the watermark could not be read
}

// NoteFailure writes the note of a failed invocation of shard shardID with
// recs (see notePrefix). It reads each of the batch's counter items'
// watermark, strongly consistent, and notes those below the item's last
// record. Records that cannot be read are left out: a redrive meets them
// again. Since the switch-over to the L0 chain no function calls it: it is
// the format Counter.Redrive reads, which the tests play the previous
// release with.
func (c *Counter) NoteFailure(ctx context.Context, shardID string, recs []events.DynamoDBEventRecord) error {
	var parsed []record
	for _, r := range recs {
		if !item.IsEventChange(r, "INSERT") {
			continue
		}
		if rec, err := parseEvent(r); err == nil {
			parsed = append(parsed, rec)
		}
	}
	if len(parsed) == 0 || shardID == "" {
		return nil
	}
	first, end, err := bounds(recs)
	if err != nil {
		return err
	}
	sid := shortID(shardID, shardIDBytes)
	groups := group(parsed)
	out := make([]*pending, len(groups))
	c.each(len(groups), func(i int) {
		g := groups[i]
		marks, err := c.readMarks(ctx, g.source, g.slice, sid)
		switch {
		case err != nil:
			out[i] = &pending{source: g.source, slice: g.slice, unknown: true}
		case marks[sid] == nil || seqLess(*marks[sid], g.recs[len(g.recs)-1].seq):
			out[i] = &pending{source: g.source, slice: g.slice, mark: marks[sid]}
		}
	})
	return c.writeNote(ctx, shardID, first, end, out)
}

// each runs f(0..n-1), Concurrency at a time.
func (c *Counter) each(n int, f func(int)) {
	conc := c.Concurrency
	if conc <= 0 {
		conc = 16
	}
	sem := make(chan struct{}, conc)
	var wg sync.WaitGroup
	for i := range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			f(i)
		})
	}
	wg.Wait()
}

// readMarks reads the watermarks sids of the counter item (source, slice),
// strongly consistent; a watermark the item does not have is nil.
func (c *Counter) readMarks(ctx context.Context, source, slice string, sids ...string) (map[string]*string, error) {
	e := newExpr()
	var proj []string
	for _, sid := range sids {
		proj = append(proj, e.name(markPrefix+sid))
	}
	out, err := c.Client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(c.Table),
		Key: map[string]types.AttributeValue{
			schema.PK: &types.AttributeValueMemberS{Value: bucketing.CounterPK(source)},
			schema.SK: &types.AttributeValueMemberS{Value: slice},
		},
		ConsistentRead:           aws.Bool(true),
		ProjectionExpression:     aws.String(joinComma(proj)),
		ExpressionAttributeNames: e.names,
	})
	if err != nil {
		return nil, fmt.Errorf("read counter %s %s: %w", source, slice, err)
	}
	marks := map[string]*string{}
	for _, sid := range sids {
		if n, ok := out.Item[markPrefix+sid].(*types.AttributeValueMemberN); ok {
			s, err := counts.CanonicalSeq(n.Value)
			if err != nil {
				return nil, fmt.Errorf("counter %s %s watermark: %w", source, slice, err)
			}
			marks[sid] = &s
		}
	}
	return marks, nil
}

// writeNote writes the note of shardID's batch first..end. It uses
// UpdateItem, which the counter may already do in its key space.
func (c *Counter) writeNote(ctx context.Context, shardID, first, end string, items []*pending) error {
	list := []types.AttributeValue{}
	size := 0
	for _, p := range items {
		if p == nil {
			continue
		}
		m := map[string]types.AttributeValue{
			"src": &types.AttributeValueMemberS{Value: p.source},
			"hr":  &types.AttributeValueMemberS{Value: p.slice},
		}
		switch {
		case p.unknown:
			m["u"] = &types.AttributeValueMemberBOOL{Value: true}
		case p.mark != nil:
			m["w"] = &types.AttributeValueMemberN{Value: *p.mark}
		}
		list = append(list, &types.AttributeValueMemberM{Value: m})
		if size += len(p.source) + len(p.slice) + 64; size > maxNoteBytes {
			return fmt.Errorf("the note of batch %s..%s of %s would pass %d bytes: not written", first, end, shardID, maxNoteBytes)
		}
	}
	e := newExpr()
	e.set(e.name(noteShard), e.str(shardID))
	e.set(e.name(noteEnd), e.num(end))
	e.set(e.name(noteItems), e.value(&types.AttributeValueMemberL{Value: list}))
	e.set(e.name(schema.TTL), e.num(strconv.FormatInt(time.Now().Add(c.Retention+24*time.Hour).Unix(), 10)))
	_, err := c.Client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(c.Table),
		Key: map[string]types.AttributeValue{
			schema.PK: &types.AttributeValueMemberS{Value: notePK(shardID)},
			schema.SK: &types.AttributeValueMemberS{Value: first},
		},
		UpdateExpression:          aws.String(e.update()),
		ExpressionAttributeNames:  e.names,
		ExpressionAttributeValues: e.values,
	})
	if err != nil {
		return fmt.Errorf("write the note of batch %s..%s of %s: %w", first, end, shardID, err)
	}
	return nil
}

// note is a note read back.
type note struct {
	end   string
	items map[[2]string]pending // by (source, slice)
}

// readNote reads the note of shardID's batch that begins at first; nil
// when there is none.
func (c *Counter) readNote(ctx context.Context, shardID, first string) (*note, error) {
	out, err := c.Client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(c.Table),
		Key: map[string]types.AttributeValue{
			schema.PK: &types.AttributeValueMemberS{Value: notePK(shardID)},
			schema.SK: &types.AttributeValueMemberS{Value: first},
		},
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return nil, fmt.Errorf("read the note of batch %s of %s: %w", first, shardID, err)
	}
	if s, ok := out.Item[noteShard].(*types.AttributeValueMemberS); !ok || s.Value != shardID {
		return nil, nil // none, or another shard's whose short id is the same
	}
	n := &note{items: map[[2]string]pending{}}
	if v, ok := out.Item[noteEnd].(*types.AttributeValueMemberN); ok {
		n.end = v.Value
	}
	list, _ := out.Item[noteItems].(*types.AttributeValueMemberL)
	if list == nil || n.end == "" {
		return nil, fmt.Errorf("the note of batch %s of %s is malformed", first, shardID)
	}
	for _, v := range list.Value {
		m, ok := v.(*types.AttributeValueMemberM)
		if !ok {
			return nil, fmt.Errorf("the note of batch %s of %s is malformed", first, shardID)
		}
		src, _ := m.Value["src"].(*types.AttributeValueMemberS)
		hr, _ := m.Value["hr"].(*types.AttributeValueMemberS)
		if src == nil || hr == nil {
			return nil, fmt.Errorf("the note of batch %s of %s is malformed", first, shardID)
		}
		p := pending{source: src.Value, slice: hr.Value}
		if w, ok := m.Value["w"].(*types.AttributeValueMemberN); ok {
			p.mark = &w.Value
		}
		if u, ok := m.Value["u"].(*types.AttributeValueMemberBOOL); ok && u.Value {
			p.unknown = true
		}
		n.items[[2]string{p.source, p.slice}] = p
	}
	return n, nil
}
