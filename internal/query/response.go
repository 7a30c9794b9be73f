package query

import (
	"encoding/json"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/shardline/shardline/internal/item"
	"github.com/shardline/shardline/internal/schema"
	"github.com/shardline/shardline/pkg/bucketing"
)

// EventsResponse is the body of a 200 answer to GET /v1/events.
type EventsResponse struct {
	Events []json.RawMessage `json:"events"`
	// NextCursor continues the listing; "" on the last page. It is always
	// present: cursor clients (Grafana's Infinity datasource) read the
	// field and stop on the empty string, and fail on a missing one.
	NextCursor string `json:"next_cursor"`
	Plan       Plan   `json:"plan"`
}

// MaxAnswerRawBytes is the most raw bytes a record carries in an answer:
// 5,592,408 bytes of base64, so that a record alone fits Lambda's 6 MB
// whatever it holds. A longer one (an API body of up to 6 MB, stored
// gzip-compressed) is answered truncated, with raw_size; "shardline
// quarantine list -raw", reading the table, prints all of it.
const MaxAnswerRawBytes = 4 << 20

// Record is a quarantined record.
type Record struct {
	ReceivedAt string         `json:"received_at"`
	Reason     string         `json:"reason"`
	Raw        []byte         `json:"raw"`                  // base64 in JSON
	RawSize    int            `json:"raw_size,omitempty"`   // bytes received, when long
	Truncated  bool           `json:"truncated,omitempty"`  // raw holds only the first bytes
	RawSHA256  string         `json:"raw_sha256,omitempty"` // hex SHA-256 of the bytes received, when truncated
	Origin     map[string]any `json:"origin"`
	Replay     *Replay        `json:"replay,omitempty"` // absent until a replay marks it
}

// Replay is the mark "shardline quarantine replay" left on a record: when
// it last changed the outcome, the state ("stored": its events are stored,
// replays skip it; "invalid": still refused) and the outcome in words.
type Replay struct {
	At      string `json:"at"`
	State   string `json:"state"`
	Outcome string `json:"outcome"`
}

// QuarantineResponse is the body of a 200 answer to GET /v1/quarantine.
type QuarantineResponse struct {
	Records    []Record `json:"records"`
	NextCursor string   `json:"next_cursor"` // "" on the last page, never absent
	Plan       Plan     `json:"plan"`
}

// record is the quarantine item it as the API returns it.
func record(it map[string]types.AttributeValue) Record {
	t, _, _ := bucketing.ParseSortKey(schema.S(it[schema.SK]))
	r := Record{ReceivedAt: t.Format(time.RFC3339Nano), Reason: schema.S(it[schema.Reason]), Origin: map[string]any{}}
	raw, whole, err := item.RawOf(it)
	if err != nil {
		r.Reason += " (stored bytes unreadable: " + err.Error() + ")"
	}
	r.Raw, r.Truncated = raw, !whole
	if n, ok := it[schema.RawSize].(*types.AttributeValueMemberN); ok {
		r.RawSize, _ = strconv.Atoi(n.Value)
	}
	r.RawSHA256 = schema.S(it[schema.RawSHA256])
	if len(r.Raw) > MaxAnswerRawBytes {
		r.RawSize = max(r.RawSize, len(r.Raw))
		r.Raw, r.Truncated = r.Raw[:MaxAnswerRawBytes], true
	}
	if m, ok := it[schema.Origin].(*types.AttributeValueMemberM); ok {
		for k, v := range m.Value {
			switch v := v.(type) {
			case *types.AttributeValueMemberS:
				r.Origin[k] = v.Value
			case *types.AttributeValueMemberN:
				n, _ := strconv.Atoi(v.Value)
				r.Origin[k] = n
			}
		}
	}
	if rp, ok := item.ReplayOf(it); ok {
		r.Replay = &Replay{At: rp.At.Format(time.RFC3339Nano), State: string(rp.State), Outcome: rp.Outcome}
	}
	return r
}
