package query

import (
	"context"
	"fmt"
	"maps"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/shardline/shardline/internal/batchget"
	"github.com/shardline/shardline/internal/schema"
)

// fill fetches from the table the events of rows that came from a Lean
// GSI, which carries keys and filter attributes only. It goes in page
// order, a request at a time, and stops once the rows filled pass the
// page's byte budget: cut ends the page there. The reads are eventually
// consistent, so an event the index already has may not be visible yet:
// a miss is read again, strongly consistent (readMisses), and only a row
// whose event is not there either is marked gone, its event expired
// between the two reads; that can shorten only a page whose events are
// being deleted anyway. It returns how many of the first rows it filled before an error.
func (pr *pageReader) fill(ctx context.Context, rows []row) (int, error) {
	bytes := 0
	for start := 0; start < len(rows) && bytes <= PageBytes; start += batchget.MaxKeys {
		chunk := rows[start:min(start+batchget.MaxKeys, len(rows))]
		if err := pr.fillChunk(ctx, chunk); err != nil {
			return start, err
		}
		for _, rw := range chunk {
			bytes += rw.size
		}
	}
	return len(rows), nil
}

// fillChunk fills the rows of chunk (at most batchget.MaxKeys) that lack their
// event.
func (pr *pageReader) fillChunk(ctx context.Context, chunk []row) error {
	var keys []map[string]types.AttributeValue
	for _, rw := range chunk {
		if _, ok := rw.item[schema.Event]; !ok {
			keys = append(keys, map[string]types.AttributeValue{schema.PK: rw.item[schema.PK], schema.SK: rw.item[schema.SK]})
		}
	}
	if len(keys) == 0 {
		return nil
	}
	got, err := pr.reqs.batchGet(ctx, keys, eventsOnly, false)
	if err != nil {
		return fmt.Errorf("fetch events of a lean GSI page: %w", err)
	}
	if err := pr.readMisses(ctx, keys, got); err != nil {
		return err
	}
	for i := range chunk {
		rw := &chunk[i]
		if _, ok := rw.item[schema.Event]; ok {
			continue
		}
		it, found := got[keyOf(rw.item)]
		if !found {
			rw.gone = true
			continue
		}
		rw.item[schema.Event] = it[schema.Event]
		rw.size = pr.size(rw.item)
	}
	return nil
}

// eventsOnly projects what fill needs of an event item.
var eventsOnly = []string{schema.PK, schema.SK, schema.Event}

// readMisses reads again, strongly consistent, the keys an eventually
// consistent read did not find, and adds what it finds to got. A replica
// may not have seen an event the index already has; read consistent, only
// an event that is gone is missing. It costs a request only when a read
// missed.
func (pr *pageReader) readMisses(ctx context.Context, keys []map[string]types.AttributeValue, got map[[2]string]map[string]types.AttributeValue) error {
	var missed []map[string]types.AttributeValue
	for _, k := range keys {
		if _, ok := got[keyOf(k)]; !ok {
			missed = append(missed, k)
		}
	}
	if len(missed) == 0 {
		return nil
	}
	again, err := pr.reqs.batchGet(ctx, missed, eventsOnly, true)
	if err != nil {
		return fmt.Errorf("fetch events a lean GSI page missed, consistent: %w", err)
	}
	maps.Copy(got, again)
	return nil
}

// keyOf is the (pk, sk) of an item or key, as batchGet answers by.
func keyOf(it map[string]types.AttributeValue) [2]string {
	return [2]string{schema.S(it[schema.PK]), schema.S(it[schema.SK])}
}
