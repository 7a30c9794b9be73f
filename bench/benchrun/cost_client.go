package benchrun

import (
	"context"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/shardline/shardline/internal/item"
	"github.com/shardline/shardline/internal/schema"
)

// kind is what an item of the table is, read from its key: the line item
// its writes and reads are priced under.
type kind int

const (
	kindEvent kind = iota
	kindHours
	kindShards
	kindDemand
	kindCatalogue
	kindCounter
	kindOther
	nKinds
)

// kindOf names the kind of the item with key (pk, sk).
func kindOf(pk, sk string) kind {
	switch {
	case strings.HasPrefix(pk, "E#"):
		return kindEvent
	case strings.HasPrefix(pk, "C#"):
		return kindCounter
	case strings.HasPrefix(pk, "S#"):
		return kindCatalogue
	case strings.HasPrefix(pk, "M#"):
		switch sk {
		case "hours":
			return kindHours
		case "shards":
			return kindShards
		case "demand":
			return kindDemand
		}
	}
	return kindOther
}

func keyOf(m map[string]types.AttributeValue) (string, string) {
	var pk, sk string
	if v, ok := m[schema.PK].(*types.AttributeValueMemberS); ok {
		pk = v.Value
	}
	if v, ok := m[schema.SK].(*types.AttributeValueMemberS); ok {
		sk = v.Value
	}
	return pk, sk
}

// tally is what one kind of item cost.
type tally struct {
	Writes int     `json:"writes"`
	Reads  int     `json:"reads"`
	WRU    float64 `json:"wru"`
	RRU    float64 `json:"rru"`
}

// ledger is the DynamoDB client of the pipeline's bookkeeping and of the
// counter in the cost model: it passes every request to DynamoDB Local
// and prices it by DynamoDB's rules, by the kind of item it touches. A
// write is billed ceil(max(size before, size after) / 1 KB): the size
// after is the item put, or, for an update, the item the update returns
// (the ledger asks for ALL_NEW when the caller asked for nothing, and
// hands the caller no attributes then); the size before is what the
// ledger's last write of the item left, the table being fresh and every
// write going through the ledger. A refused condition is billed at the
// item as it is. A GetItem is billed per 4 KB of the item, half when
// eventually consistent.
type ledger struct {
	c *dynamodb.Client

	mu    sync.Mutex
	sizes map[[2]string]int
	kinds [nKinds]tally
}

func newLedger(c *dynamodb.Client) *ledger { return &ledger{c: c, sizes: map[[2]string]int{}} }

// tallies is a copy of what the ledger counted, by kind.
func (l *ledger) tallies() [nKinds]tally {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.kinds
}

func (l *ledger) wrote(key map[string]types.AttributeValue, after int, ok bool) {
	pk, sk := keyOf(key)
	k := [2]string{pk, sk}
	l.mu.Lock()
	defer l.mu.Unlock()
	before := l.sizes[k]
	if !ok {
		after = before
	}
	l.sizes[k] = after
	t := &l.kinds[kindOf(pk, sk)]
	t.Writes++
	t.WRU += float64(writeUnits(before, after))
}

// PutItem forwards the put and prices it.
func (l *ledger) PutItem(ctx context.Context, in *dynamodb.PutItemInput, o ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	out, err := l.c.PutItem(ctx, in, o...)
	l.wrote(in.Item, item.Bytes(in.Item), err == nil)
	return out, err
}

// UpdateItem forwards the update and prices it.
func (l *ledger) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	asked := in.ReturnValues
	cp := *in
	if asked == "" || asked == types.ReturnValueNone {
		cp.ReturnValues = types.ReturnValueAllNew
	}
	out, err := l.c.UpdateItem(ctx, &cp, o...)
	sized := err == nil && (cp.ReturnValues == types.ReturnValueAllNew)
	after := 0
	if sized {
		after = item.Bytes(out.Attributes)
	}
	l.wrote(in.Key, after, sized)
	if err == nil && asked != cp.ReturnValues {
		out.Attributes = nil
	}
	return out, err
}

// GetItem forwards the read and prices it.
func (l *ledger) GetItem(ctx context.Context, in *dynamodb.GetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	out, err := l.c.GetItem(ctx, in, o...)
	size := 0
	if err == nil {
		size = item.Bytes(out.Item)
	}
	pk, sk := keyOf(in.Key)
	l.mu.Lock()
	t := &l.kinds[kindOf(pk, sk)]
	t.Reads++
	t.RRU += readUnits(size, aws.ToBool(in.ConsistentRead))
	l.mu.Unlock()
	return out, err
}

// Query forwards a query and prices it by the capacity DynamoDB Local
// says it consumed, under the kind of its partition (":pk"): the counter
// reads its chain's tip, and the scheduled fold reads links and packs.
func (l *ledger) Query(ctx context.Context, in *dynamodb.QueryInput, o ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	cp := *in
	cp.ReturnConsumedCapacity = types.ReturnConsumedCapacityTotal
	out, err := l.c.Query(ctx, &cp, o...)
	if err != nil {
		return out, err
	}
	pk, _ := in.ExpressionAttributeValues[":pk"].(*types.AttributeValueMemberS)
	l.mu.Lock()
	t := &l.kinds[kindOther]
	if pk != nil {
		t = &l.kinds[kindOf(pk.Value, "")]
	}
	t.Reads++
	if out.ConsumedCapacity != nil {
		t.RRU += aws.ToFloat64(out.ConsumedCapacity.CapacityUnits)
	}
	l.mu.Unlock()
	return out, err
}

// BatchGetItem forwards the reads and prices each key read, as DynamoDB
// bills a BatchGetItem: each key as a GetItem of it, an item not found at
// the minimum, a key left unprocessed not at all. The counter's switch-over
// guard reads the per-source counter's watermarks this way, ingest its
// batches' first-of-day shard records and hour indexes.
func (l *ledger) BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	out, err := l.c.BatchGetItem(ctx, in, o...)
	if err != nil {
		return out, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for table, ka := range in.RequestItems {
		found := map[[2]string]int{}
		for _, it := range out.Responses[table] {
			pk, sk := keyOf(it)
			found[[2]string{pk, sk}] = item.Bytes(it)
		}
		left := map[[2]string]bool{}
		for _, k := range out.UnprocessedKeys[table].Keys {
			pk, sk := keyOf(k)
			left[[2]string{pk, sk}] = true
		}
		for _, k := range ka.Keys {
			pk, sk := keyOf(k)
			if left[[2]string{pk, sk}] {
				continue
			}
			t := &l.kinds[kindOf(pk, sk)]
			t.Reads++
			t.RRU += readUnits(found[[2]string{pk, sk}], aws.ToBool(ka.ConsistentRead))
		}
	}
	return out, err
}

// eventWrite is what the event items written so far cost and weigh.
type eventWrite struct {
	Requests  int
	Items     int
	WRU       float64
	GSIWRU    float64
	ItemBytes int // the items, plus DynamoDB's per-item overhead
	GSIBytes  int // their GSI copies, likewise
}

// splitClient is the ingest function's client in the cost model: event
// items (BatchWriteItem) go to the latency stub, which stores nothing,
// and are priced here from their sizes, item and GSI copy apart; the
// bookkeeping goes to the ledger, on DynamoDB Local, whose conditions and
// stored items decide what the handler writes next. Every event item
// written becomes a record on the simulated table stream (streamSink).
type splitClient struct {
	events *dynamodb.Client
	book   *ledger
	sink   *streamSink

	mu sync.Mutex
	ew eventWrite
}

// BatchWriteItem sends the events to the stub and prices them.
func (s *splitClient) BatchWriteItem(ctx context.Context, in *dynamodb.BatchWriteItemInput, o ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error) {
	out, err := s.events.BatchWriteItem(ctx, in, o...)
	if err != nil {
		return out, err
	}
	var w eventWrite
	w.Requests = 1
	for _, reqs := range in.RequestItems {
		for _, r := range reqs {
			if r.PutRequest == nil {
				continue
			}
			it := r.PutRequest.Item
			b := item.Bytes(it)
			w.Items++
			w.WRU += float64(item.WriteUnits(b))
			w.ItemBytes += b + dynamoItemOverhead
			if _, ok := it[schema.GSIPK]; ok {
				g := gsiBytes(it)
				w.GSIWRU += float64(item.WriteUnits(g))
				w.GSIBytes += g + dynamoItemOverhead
			}
			s.sink.put(it)
		}
	}
	s.mu.Lock()
	s.ew.Requests += w.Requests
	s.ew.Items += w.Items
	s.ew.WRU += w.WRU
	s.ew.GSIWRU += w.GSIWRU
	s.ew.ItemBytes += w.ItemBytes
	s.ew.GSIBytes += w.GSIBytes
	s.mu.Unlock()
	return out, nil
}

func (s *splitClient) written() eventWrite {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ew
}

// PutItem goes to the ledger.
func (s *splitClient) PutItem(ctx context.Context, in *dynamodb.PutItemInput, o ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	return s.book.PutItem(ctx, in, o...)
}

// UpdateItem goes to the ledger.
func (s *splitClient) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	return s.book.UpdateItem(ctx, in, o...)
}

// GetItem goes to the ledger.
func (s *splitClient) GetItem(ctx context.Context, in *dynamodb.GetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	return s.book.GetItem(ctx, in, o...)
}

// BatchGetItem goes to the ledger.
func (s *splitClient) BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	return s.book.BatchGetItem(ctx, in, o...)
}

// Query goes to the ledger.
func (s *splitClient) Query(ctx context.Context, in *dynamodb.QueryInput, o ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	return s.book.Query(ctx, in, o...)
}

// gsiBytes is the size of an event item's GSI copy: its keys, the GSI's
// key and the projected attributes.
func gsiBytes(it map[string]types.AttributeValue) int {
	keep := make(map[string]types.AttributeValue, len(schema.Projected)+3)
	for _, a := range append([]string{schema.PK, schema.SK, schema.GSIPK}, schema.Projected...) {
		if v, ok := it[a]; ok {
			keep[a] = v
		}
	}
	return item.Bytes(keep)
}
