package item

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/shardline/shardline/internal/schema"
	"github.com/shardline/shardline/pkg/bucketing"
)

// Changed is an event item as a DynamoDB stream record names it.
type Changed struct {
	Source string
	Shard  int // the write shard of its key
	Time   time.Time
	ID     string
}

// IsEventChange says whether r is a change of an event item, of one of the
// kinds names ("INSERT", "MODIFY"): what the counter's and the archive's
// event source mappings let through. TTL removals, the quarantine, shard
// records, counters and the catalogue are not.
func IsEventChange(r events.DynamoDBEventRecord, names ...string) bool {
	pk, ok := StreamString(r.Change.Keys, schema.PK)
	return ok && strings.HasPrefix(pk, "E#") && slices.Contains(names, r.EventName)
}

// ChangedEvent reads which event r changed from its keys.
func ChangedEvent(r events.DynamoDBEventRecord) (Changed, error) {
	pk, _ := StreamString(r.Change.Keys, schema.PK)
	k, err := bucketing.ParsePK(pk)
	if err != nil {
		return Changed{}, err
	}
	sk, _ := StreamString(r.Change.Keys, schema.SK)
	t, id, err := bucketing.ParseSortKey(sk)
	if err != nil {
		return Changed{}, err
	}
	return Changed{Source: k.Source, Shard: k.Shard, Time: t, ID: id}, nil
}

// StreamString is the string attribute name of a stream record's keys or
// image; ok is false when it is absent or not a string.
func StreamString(m map[string]events.DynamoDBAttributeValue, name string) (string, bool) {
	v, ok := m[name]
	if !ok || v.DataType() != events.DataTypeString {
		return "", false
	}
	return v.String(), true
}

// NewImageString is StreamString of r's new image, an error when absent:
// the stream must carry new images.
func NewImageString(r events.DynamoDBEventRecord, name string) (string, error) {
	s, ok := StreamString(r.Change.NewImage, name)
	if !ok {
		return "", fmt.Errorf("no %q in the new image: the stream must carry new images", name)
	}
	return s, nil
}
