package query

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/shardline/shardline/internal/batchget"
	"github.com/shardline/shardline/internal/schema"
	"github.com/shardline/shardline/internal/shardmap"
	"github.com/shardline/shardline/pkg/bucketing"
)

// requests are one page's DynamoDB requests, planner's and reader's alike:
// at most a bounded number in flight, each counted with the read capacity
// it consumed, for the page's plan.
type requests struct {
	client Client
	table  string
	sem    chan struct{} // bounds the requests in flight

	mu  sync.Mutex
	n   int
	rcu float64
}

// newRequests bounds a page's requests to conc in flight
// (DefaultConcurrency when conc is not positive).
func newRequests(client Client, table string, conc int) *requests {
	if conc <= 0 {
		conc = DefaultConcurrency
	}
	return &requests{client: client, table: table, sem: make(chan struct{}, conc)}
}

func (q *requests) acquire(ctx context.Context) error {
	select {
	case q.sem <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (q *requests) release() { <-q.sem }

// count adds requests and the read capacity they consumed to the plan.
func (q *requests) count(n int, rcu float64) {
	q.mu.Lock()
	q.n += n
	q.rcu += rcu
	q.mu.Unlock()
}

// total is what the page's requests have made and cost so far.
func (q *requests) total() (n int, rcu float64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.n, q.rcu
}

// query makes one Query request.
func (q *requests) query(ctx context.Context, in *dynamodb.QueryInput) (*dynamodb.QueryOutput, error) {
	if err := q.acquire(ctx); err != nil {
		return nil, err
	}
	defer q.release()
	out, err := q.client.Query(ctx, in)
	if err != nil {
		q.count(1, 0)
		return nil, fmt.Errorf("query %s: %w", schema.S(in.ExpressionAttributeValues[":pk"]), err)
	}
	var rcu float64
	if out.ConsumedCapacity != nil {
		rcu = aws.ToFloat64(out.ConsumedCapacity.CapacityUnits)
	}
	q.count(1, rcu)
	return out, nil
}

// readDay reads day's shard record and hour index: one request.
func (q *requests) readDay(ctx context.Context, s bucketing.Stream, day string) (shardmap.Day, error) {
	if err := q.acquire(ctx); err != nil {
		return shardmap.Day{}, err
	}
	defer q.release()
	d, rcu, err := shardmap.ReadDay(ctx, q.client, q.table, s, day)
	q.count(1, rcu)
	if err != nil {
		return shardmap.Day{}, fmt.Errorf("shard record for %s: %w", day, err)
	}
	return d, nil
}

// batchGet reads the items of keys (any number), by (pk, sk), with only the
// attributes in project (all when nil), strongly consistent if consistent.
// It retries the keys DynamoDB leaves unprocessed with a growing pause
// (unprocessedRounds), for as long as ctx lasts.
func (q *requests) batchGet(ctx context.Context, keys []map[string]types.AttributeValue, project []string, consistent bool) (map[[2]string]map[string]types.AttributeValue, error) {
	got := map[[2]string]map[string]types.AttributeValue{}
	send := func(ctx context.Context, chunk []batchget.Key) ([]batchget.Key, error) {
		out, err := q.batchGetOnce(ctx, chunk, project, consistent)
		if err != nil {
			return nil, err
		}
		for _, it := range out.Responses[q.table] {
			got[[2]string{schema.S(it[schema.PK]), schema.S(it[schema.SK])}] = it
		}
		return out.UnprocessedKeys[q.table].Keys, nil
	}
	for len(keys) > 0 {
		chunk := keys[:min(len(keys), batchget.MaxKeys)]
		keys = keys[len(chunk):]
		if _, err := unprocessedRounds.Read(ctx, chunk, send); err != nil {
			return nil, err
		}
	}
	return got, nil
}

// unprocessedRounds reads again the keys DynamoDB left unprocessed, 20 ms
// later the first time, up to 120 ms, until ctx ends.
var unprocessedRounds = batchget.Rounds{
	Pause: func(n int) time.Duration { return time.Duration(min(n-1, 6)) * 20 * time.Millisecond },
}

func (q *requests) batchGetOnce(ctx context.Context, keys []map[string]types.AttributeValue, project []string, consistent bool) (*dynamodb.BatchGetItemOutput, error) {
	if err := q.acquire(ctx); err != nil {
		return nil, err
	}
	defer q.release()
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
	out, err := q.client.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{
		RequestItems:           map[string]types.KeysAndAttributes{q.table: ka},
		ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal,
	})
	if err != nil {
		q.count(1, 0)
		return nil, err
	}
	var rcu float64
	for _, c := range out.ConsumedCapacity {
		rcu += aws.ToFloat64(c.CapacityUnits)
	}
	q.count(1, rcu)
	return out, nil
}
