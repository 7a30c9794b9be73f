package item

import (
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/shardline/shardline/internal/schema"
)

// ReplayState is what a replay (shardline quarantine replay) found a
// quarantined record to be.
type ReplayState string

// The replay states.
const (
	// ReplayStored: the record's events were stored. Replays skip it.
	ReplayStored ReplayState = "stored"
	// ReplayInvalid: the record is still refused. A later replay checks it
	// again, and writes only if the outcome changed.
	ReplayInvalid ReplayState = "invalid"
)

// Replay is the mark a replay leaves on a quarantined record: when it
// changed the outcome, the state, and the outcome in words.
type Replay struct {
	At      time.Time
	State   ReplayState
	Outcome string
}

// ReplayOf reads the replay mark of a quarantine item; ok is false when no
// replay has marked it.
func ReplayOf(attrs map[string]types.AttributeValue) (r Replay, ok bool) {
	st, ok := attrs[schema.ReplayState].(*types.AttributeValueMemberS)
	if !ok {
		return Replay{}, false
	}
	r.State = ReplayState(st.Value)
	if o, ok := attrs[schema.ReplayOutcome].(*types.AttributeValueMemberS); ok {
		r.Outcome = o.Value
	}
	if at, ok := attrs[schema.ReplayedAt].(*types.AttributeValueMemberS); ok {
		r.At, _ = time.Parse(time.RFC3339Nano, at.Value)
	}
	return r, true
}

// OriginOf reads the origin of a quarantine item, as Quarantine wrote it.
func OriginOf(attrs map[string]types.AttributeValue) Origin {
	var o Origin
	m, ok := attrs[schema.Origin].(*types.AttributeValueMemberM)
	if !ok {
		return o
	}
	get := func(k string) string {
		if v, ok := m.Value[k].(*types.AttributeValueMemberS); ok {
			return v.Value
		}
		return ""
	}
	o.StreamARN, o.ShardID = get("stream_arn"), get("shard_id")
	o.SequenceNumber, o.RequestID = get("sequence_number"), get("request_id")
	o.Tenant = get(OriginTenant)
	index := func(k string) *int {
		if v, ok := m.Value[k].(*types.AttributeValueMemberN); ok {
			if n, err := strconv.Atoi(v.Value); err == nil {
				return &n
			}
		}
		return nil
	}
	o.SubIndex, o.Index = index("sub_index"), index("index")
	return o
}
