package benchrun

import (
	"context"
	"fmt"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/shardline/shardline/internal/item"
	"github.com/shardline/shardline/internal/schema"
)

// meter is the counter's DynamoDB client in the bench: it passes the
// counter's requests on unchanged, sums the write capacity DynamoDB Local
// reports for them, and prices each update itself the way DynamoDB bills
// it, from the item's size before and after: after, read back with a
// request it does not count; before, what the last update of the item
// left (the counter is the only writer), or read the first time. Updates
// must not run concurrently on one item, or the sizes mix; the counter
// updates the items of one batch at once, which is safe.
type meter struct {
	c *dynamodb.Client

	mu       sync.Mutex
	sizes    map[string]int // item size after its last update, by table and key
	updates  int
	reads    int     // the counter's own GetItem requests (after a lost condition)
	reported float64 // WCU DynamoDB Local reported
	priced   int     // WCU by DynamoDB's rule: ceil(max(before, after) / 1 KB)
}

// usage is what a meter has counted.
type usage struct {
	Updates  int
	Reads    int
	Reported float64
	Priced   int
}

func (m *meter) usage() usage {
	m.mu.Lock()
	defer m.mu.Unlock()
	return usage{Updates: m.updates, Reads: m.reads, Reported: m.reported, Priced: m.priced}
}

func (u usage) minus(v usage) usage {
	return usage{Updates: u.Updates - v.Updates, Reads: u.Reads - v.Reads, Reported: u.Reported - v.Reported, Priced: u.Priced - v.Priced}
}

// UpdateItem forwards the update and prices it.
func (m *meter) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	k := aws.ToString(in.TableName) + "\x00" + keyString(in.Key)
	m.mu.Lock()
	before, ok := m.sizes[k]
	m.mu.Unlock()
	if !ok {
		var err error
		if before, err = m.size(ctx, in.TableName, in.Key); err != nil {
			return nil, err
		}
	}
	out, err := m.c.UpdateItem(ctx, in, o...)
	after, reported := before, 0.0
	if err == nil {
		if out.ConsumedCapacity != nil {
			reported = aws.ToFloat64(out.ConsumedCapacity.CapacityUnits)
		}
		if after, err = m.size(ctx, in.TableName, in.Key); err != nil {
			return nil, err
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.sizes == nil {
		m.sizes = map[string]int{}
	}
	m.sizes[k] = after
	if err != nil {
		delete(m.sizes, k) // a failed update may have been applied: read the item next time
	}
	m.updates++
	m.reported += reported
	m.priced += writeUnits(before, after) // a refused condition is billed too, on the item as it is
	return out, err
}

// GetItem forwards the counter's read.
func (m *meter) GetItem(ctx context.Context, in *dynamodb.GetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	m.mu.Lock()
	m.reads++
	m.mu.Unlock()
	return m.c.GetItem(ctx, in, o...)
}

func (m *meter) size(ctx context.Context, table *string, key map[string]types.AttributeValue) (int, error) {
	out, err := m.c.GetItem(ctx, &dynamodb.GetItemInput{TableName: table, Key: key, ConsistentRead: aws.Bool(true)})
	if err != nil {
		return 0, fmt.Errorf("meter: read the counter item: %w", err)
	}
	return item.Bytes(out.Item), nil
}

// keyString names a counter item's key: its partition and sort key strings.
func keyString(key map[string]types.AttributeValue) string {
	var pk, sk string
	if v, ok := key[schema.PK].(*types.AttributeValueMemberS); ok {
		pk = v.Value
	}
	if v, ok := key[schema.SK].(*types.AttributeValueMemberS); ok {
		sk = v.Value
	}
	return pk + "\x00" + sk
}
