package benchrun

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/shardline/shardline/internal/ingest"
	"github.com/shardline/shardline/internal/schema"
	"github.com/shardline/shardline/pkg/bucketing"
)

// simSource makes the stream records that the inserts of a source's events
// put on the table's stream, without writing the events: the counter's
// input for the hours and rates that the real ingest handler would take
// too long to write into DynamoDB Local. The records are what the counter
// reads of a real one: the event item's keys, its type, a sequence number.
type simSource struct {
	name   string
	types  []string
	rng    *rand.Rand
	seq    uint64            // the last sequence number handed out
	pks    map[string]string // partition keys by day and write shard
	shards int               // write shards per day: ingest's default
}

// seqPrefix makes sequence numbers as long as DynamoDB's (28 digits here),
// so that the watermarks in counter items have their real size.
const seqPrefix = "40000000"

func newSimSource(name string, types []string, seed uint64) *simSource {
	return &simSource{name: name, types: types, rng: rand.New(rand.NewPCG(seed, 1)), pks: map[string]string{}, shards: ingest.DefaultShards}
}

// eventTypes are n types, as a busy source of a platform team might send.
func eventTypes(n int) []string {
	names := [...]string{"reading", "alert", "heartbeat", "door", "fuel", "gps", "engine", "tyre", "driver", "route"}
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("com.example.fleet.%s.v%d", names[i%len(names)], 1+i/len(names))
	}
	return out
}

// record is event i of the source, of type typ, sent at at: its write
// shard and the stream record of its insert.
func (s *simSource) record(i int, at time.Time, typ string) (int, events.DynamoDBEventRecord) {
	shard := i % s.shards
	day := bucketing.Day(at)
	k := day + "#" + strconv.Itoa(shard)
	pk, ok := s.pks[k]
	if !ok {
		pk = bucketing.Stream{Space: bucketing.Events, Source: s.name}.PK(day, shard)
		s.pks[k] = pk
	}
	s.seq++
	var r events.DynamoDBEventRecord
	r.EventName = "INSERT"
	r.EventSource = "aws:dynamodb"
	r.Change.Keys = map[string]events.DynamoDBAttributeValue{
		schema.PK: events.NewStringAttribute(pk),
		schema.SK: events.NewStringAttribute(bucketing.SortKey(at, "sim-"+strconv.Itoa(i))),
	}
	r.Change.NewImage = map[string]events.DynamoDBAttributeValue{schema.Type: events.NewStringAttribute(typ)}
	r.Change.SequenceNumber = seqPrefix + fmt.Sprintf("%020d", s.seq)
	r.Change.StreamViewType = string(schema.StreamView)
	return shard, r
}

// randomType is one of the source's types, uniformly at random.
func (s *simSource) randomType() string { return s.types[s.rng.IntN(len(s.types))] }

// arrivals are the source's events sent at rate a second from from to to,
// spread over streamShards stream shards by their write shard, each event
// counted at its own time; bytes is each record's size in a payload.
func (s *simSource) arrivals(from, to time.Time, rate, streamShards, bytes int) [][]arrival {
	out := make([][]arrival, streamShards)
	step := time.Second / time.Duration(rate)
	for i, at := 0, from; at.Before(to); i, at = i+1, at.Add(step) {
		shard, r := s.record(i, at, s.randomType())
		out[shard%streamShards] = append(out[shard%streamShards], arrival{rec: r, at: at, bytes: bytes})
	}
	return out
}
