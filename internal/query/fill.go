package query

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/shardline/shardline/internal/schema"
)

// fill fetches from the table the events of rows that came from a Lean
// GSI, which carries keys and filter attributes only. It goes in page
// order, a request at a time, and stops once the rows filled pass the
// page's byte budget: cut ends the page there. A row whose event expired
// between the two reads is marked gone; that can shorten only a page whose
// events are being deleted anyway.
func (pr *pageReader) fill(ctx context.Context, rows []row) error {
	bytes := 0
	for start := 0; start < len(rows) && bytes <= PageBytes; start += batchGetKeys {
		chunk := rows[start:min(start+batchGetKeys, len(rows))]
		if err := pr.fillChunk(ctx, chunk); err != nil {
			return err
		}
		for _, rw := range chunk {
			bytes += rw.size
		}
	}
	return nil
}

// fillChunk fills the rows of chunk (at most batchGetKeys) that lack their
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
	for i := range chunk {
		rw := &chunk[i]
		if _, ok := rw.item[schema.Event]; ok {
			continue
		}
		it, found := got[[2]string{str(rw.item[schema.PK]), rw.sk}]
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
