package benchrun

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/shardline/shardline/internal/item"
	"github.com/shardline/shardline/internal/schema"
)

// streamSink turns the event items written into the records of the
// table's stream, spread over shards stream shards by partition key as a
// table's partitions spread them, stamped with the simulated clock.
type streamSink struct {
	shards int
	clock  *simClock

	mu   sync.Mutex
	seq  uint64
	recs [][]arrival // by stream shard, since the last take
}

func newStreamSink(shards int, clock *simClock) *streamSink {
	return &streamSink{shards: shards, clock: clock, recs: make([][]arrival, shards)}
}

func (s *streamSink) put(it map[string]types.AttributeValue) {
	img, err := streamImage(it)
	if err != nil {
		panic(fmt.Sprintf("cost model: an event item the stream cannot carry: %v", err)) // the handler wrote it: a bug here
	}
	pk, sk := keyOf(it)
	h := fnv.New32a()
	h.Write([]byte(pk))
	shard := int(h.Sum32() % uint32(s.shards))
	now := s.clock.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	var r events.DynamoDBEventRecord
	r.EventName = "INSERT"
	r.EventSource = "aws:dynamodb"
	r.EventVersion = "1.1"
	r.AWSRegion = "us-east-1"
	r.EventID = fmt.Sprintf("%032x", s.seq)
	r.Change.Keys = map[string]events.DynamoDBAttributeValue{
		schema.PK: events.NewStringAttribute(pk), schema.SK: events.NewStringAttribute(sk),
	}
	r.Change.NewImage = img
	r.Change.SequenceNumber = seqPrefix + fmt.Sprintf("%020d", s.seq)
	r.Change.SizeBytes = int64(item.Bytes(it))
	r.Change.StreamViewType = string(schema.StreamView)
	r.Change.ApproximateCreationDateTime = events.SecondsEpochTime{Time: now}
	s.recs[shard] = append(s.recs[shard], arrival{rec: r, at: now, bytes: recordBytes(r)})
}

// take hands over the records put since the last take, by stream shard.
func (s *streamSink) take() [][]arrival {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.recs
	s.recs = make([][]arrival, s.shards)
	return out
}

// recordBytes is a stream record's size in an invocation's payload, which
// decides where the mapping's 6 MB cuts a batch: its JSON, with the
// stream's ARN the bench leaves out.
func recordBytes(r events.DynamoDBEventRecord) int {
	const arn = len("arn:aws:dynamodb:us-east-1:000000000000:table/shardline-events/stream/2026-11-24T00:00:00.000")
	b, err := json.Marshal(r)
	if err != nil {
		panic(fmt.Sprintf("cost model: encode a stream record: %v", err)) // every value came from streamValue
	}
	return len(b) + arn
}

// streamImage converts an item to a stream record's image.
func streamImage(it map[string]types.AttributeValue) (map[string]events.DynamoDBAttributeValue, error) {
	out := make(map[string]events.DynamoDBAttributeValue, len(it))
	for k, v := range it {
		a, err := streamValue(v)
		if err != nil {
			return nil, fmt.Errorf("attribute %q: %w", k, err)
		}
		out[k] = a
	}
	return out, nil
}

func streamValue(v types.AttributeValue) (events.DynamoDBAttributeValue, error) {
	switch x := v.(type) {
	case *types.AttributeValueMemberS:
		return events.NewStringAttribute(x.Value), nil
	case *types.AttributeValueMemberN:
		return events.NewNumberAttribute(x.Value), nil
	case *types.AttributeValueMemberB:
		return events.NewBinaryAttribute(x.Value), nil
	case *types.AttributeValueMemberBOOL:
		return events.NewBooleanAttribute(x.Value), nil
	case *types.AttributeValueMemberNULL:
		return events.NewNullAttribute(), nil
	case *types.AttributeValueMemberSS:
		return events.NewStringSetAttribute(x.Value), nil
	case *types.AttributeValueMemberNS:
		return events.NewNumberSetAttribute(x.Value), nil
	case *types.AttributeValueMemberBS:
		return events.NewBinarySetAttribute(x.Value), nil
	case *types.AttributeValueMemberL:
		l := make([]events.DynamoDBAttributeValue, len(x.Value))
		for i, e := range x.Value {
			a, err := streamValue(e)
			if err != nil {
				return a, err
			}
			l[i] = a
		}
		return events.NewListAttribute(l), nil
	case *types.AttributeValueMemberM:
		m, err := streamImage(x.Value)
		if err != nil {
			return events.DynamoDBAttributeValue{}, err
		}
		return events.NewMapAttribute(m), nil
	}
	return events.DynamoDBAttributeValue{}, fmt.Errorf("unknown attribute type %T", v)
}

// simClock is the simulated time the handlers read as their clock.
type simClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *simClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *simClock) set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}
