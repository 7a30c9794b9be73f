// Package replay is "shardline quarantine replay": it checks quarantined
// records again under the ingest function's current configuration, stores
// the events that are valid now through the ingest write path, and marks
// each record with the outcome instead of deleting it. It also walks the
// quarantine for "shardline quarantine list".
//
// walk.go pages the quarantine by time received; replay.go decides what
// becomes of each record; mark.go writes the marks; outcome.go words them.
package replay

import (
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/shardline/shardline/internal/item"
	"github.com/shardline/shardline/internal/schema"
	"github.com/shardline/shardline/pkg/bucketing"
)

// Record is a quarantined record as the table holds it.
type Record struct {
	PK, SK     string
	ReceivedAt time.Time
	Origin     item.Origin
	Reason     string
	Raw        []byte // the bytes received, or their first MaxRawBytes when not Whole
	Whole      bool
	Replay     item.Replay // the last replay's mark
	Replayed   bool        // a replay marked it
}

// Stored says a replay stored the record's events already.
func (r Record) Stored() bool { return r.Replayed && r.Replay.State == item.ReplayStored }

// decode reads a quarantine item.
func decode(it map[string]types.AttributeValue) (Record, error) {
	r := Record{PK: schema.S(it[schema.PK]), SK: schema.S(it[schema.SK]), Reason: schema.S(it[schema.Reason])}
	t, _, err := bucketing.ParseSortKey(r.SK)
	if err != nil {
		return r, fmt.Errorf("quarantine item %s %s: %w", r.PK, r.SK, err)
	}
	r.ReceivedAt = t
	if r.Raw, r.Whole, err = item.RawOf(it); err != nil {
		return r, fmt.Errorf("quarantine item %s %s: %w", r.PK, r.SK, err)
	}
	r.Origin = item.OriginOf(it)
	r.Replay, r.Replayed = item.ReplayOf(it)
	return r, nil
}

// Name is how messages name the record: its time received and origin.
func (r Record) Name() string {
	o := r.Origin
	var b strings.Builder
	b.WriteString(r.ReceivedAt.Format(time.RFC3339Nano))
	if o.SequenceNumber != "" {
		fmt.Fprintf(&b, " %s %s", o.ShardID, o.SequenceNumber)
	} else {
		fmt.Fprintf(&b, " request %s", o.RequestID)
	}
	if o.SubIndex != nil {
		fmt.Fprintf(&b, " sub_index %d", *o.SubIndex)
	}
	if o.Index != nil {
		fmt.Fprintf(&b, " index %d", *o.Index)
	}
	return b.String()
}
