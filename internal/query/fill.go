package query

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/shardline/shardline/internal/backoff"
	"github.com/shardline/shardline/internal/schema"
)

// batchGetKeys is the most keys one BatchGetItem takes.
const batchGetKeys = 100

// fill fetches from the table the events of rows that came from a Lean
// GSI, which carries keys and filter attributes only. It goes in page
// order, a request at a time, and stops once the rows filled pass the
// page's byte budget: cut ends the page there. A row whose event expired
// between the two reads is marked gone; that can shorten only a page whose
// events are being deleted anyway.
func (rn *run) fill(ctx context.Context, rows []row) error {
	bytes := 0
	for start := 0; start < len(rows) && bytes <= PageBytes; start += batchGetKeys {
		chunk := rows[start:min(start+batchGetKeys, len(rows))]
		if err := rn.fillChunk(ctx, chunk); err != nil {
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
func (rn *run) fillChunk(ctx context.Context, chunk []row) error {
	var keys []map[string]types.AttributeValue
	for _, rw := range chunk {
		if _, ok := rw.item[schema.Event]; !ok {
			keys = append(keys, map[string]types.AttributeValue{schema.PK: rw.item[schema.PK], schema.SK: rw.item[schema.SK]})
		}
	}
	if len(keys) == 0 {
		return nil
	}
	got, err := rn.batchGet(ctx, keys, eventsOnly, false)
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
		rw.size = rn.size(rw.item)
	}
	return nil
}

// eventsOnly projects what fill needs of an event item.
var eventsOnly = []string{schema.PK, schema.SK, schema.Event}

// batchGet reads the items of keys (any number), by (pk, sk), with only the
// attributes in project (all when nil), strongly consistent if consistent.
// It retries the keys DynamoDB leaves unprocessed with a growing pause.
func (rn *run) batchGet(ctx context.Context, keys []map[string]types.AttributeValue, project []string, consistent bool) (map[[2]string]map[string]types.AttributeValue, error) {
	got := map[[2]string]map[string]types.AttributeValue{}
	for len(keys) > 0 {
		chunk := keys[:min(len(keys), batchGetKeys)]
		keys = keys[len(chunk):]
		for attempt := 0; len(chunk) > 0; attempt++ {
			if attempt > 0 {
				if err := backoff.Sleep(ctx, time.Duration(min(attempt, 6))*20*time.Millisecond); err != nil {
					return nil, err
				}
			}
			out, err := rn.batchGetOnce(ctx, chunk, project, consistent)
			if err != nil {
				return nil, err
			}
			for _, it := range out.Responses[rn.r.Table] {
				got[[2]string{str(it[schema.PK]), str(it[schema.SK])}] = it
			}
			chunk = out.UnprocessedKeys[rn.r.Table].Keys
		}
	}
	return got, nil
}

func (rn *run) batchGetOnce(ctx context.Context, keys []map[string]types.AttributeValue, project []string, consistent bool) (*dynamodb.BatchGetItemOutput, error) {
	if err := rn.acquire(ctx); err != nil {
		return nil, err
	}
	defer rn.release()
	ka := types.KeysAndAttributes{Keys: keys, ConsistentRead: aws.Bool(consistent)}
	if project != nil {
		names := map[string]string{}
		var refs []string
		for i, a := range project {
			ref := fmt.Sprintf("#a%d", i)
			names[ref] = a
			refs = append(refs, ref)
		}
		ka.ProjectionExpression, ka.ExpressionAttributeNames = aws.String(strings.Join(refs, ", ")), names
	}
	out, err := rn.r.Client.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{
		RequestItems:           map[string]types.KeysAndAttributes{rn.r.Table: ka},
		ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal,
	})
	if err != nil {
		rn.count(1, 0)
		return nil, err
	}
	var rcu float64
	for _, c := range out.ConsumedCapacity {
		rcu += aws.ToFloat64(c.CapacityUnits)
	}
	rn.count(1, rcu)
	return out, nil
}
