package archive

import (
	"fmt"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/shardline/shardline/internal/item"
	"github.com/shardline/shardline/internal/schema"
)

// Line is one archived event: one JSON object on a line of its object. The
// columns of the stack's Glue table are these fields.
type Line struct {
	Source   string `json:"source"`
	ID       string `json:"id"`
	Time     string `json:"time"` // the event's time, RFC 3339 UTC with the stored precision
	Type     string `json:"type"`
	Subject  string `json:"subject,omitempty"`
	Change   string `json:"change"`    // INSERT (first stored) or MODIFY (stored again with other content)
	StoredAt string `json:"stored_at"` // when the table changed: the stream record's creation time, RFC 3339 UTC
	Seq      string `json:"seq"`       // the stream record's sequence number: a later change of one event has a larger one
	Event    string `json:"event"`     // the CloudEvent as stored, JSON text, byte for byte
	day      time.Time
}

// parse reads the records to archive: inserted or rewritten event items.
// Everything else (TTL removals, quarantine, shard records, counters,
// catalogue) is skipped, as the mapping's filter would have skipped it. An
// event item that cannot be read is an error: it would otherwise never
// reach the archive.
func parse(recs []events.DynamoDBEventRecord) (lines []Line, skipped int, err error) {
	for _, r := range recs {
		if !item.IsEventChange(r, "INSERT", "MODIFY") {
			skipped++
			continue
		}
		l, err := parseEvent(r)
		if err != nil {
			return nil, skipped, fmt.Errorf("stream record %s: %w", r.EventID, err)
		}
		lines = append(lines, l)
	}
	return lines, skipped, nil
}

func parseEvent(r events.DynamoDBEventRecord) (Line, error) {
	ev, err := item.ChangedEvent(r)
	if err != nil {
		return Line{}, err
	}
	body, err := item.NewImageString(r, schema.Event)
	if err != nil {
		return Line{}, err
	}
	typ, _ := item.StreamString(r.Change.NewImage, schema.Type)
	subject, _ := item.StreamString(r.Change.NewImage, schema.Subject)
	return Line{
		Source: ev.Source, ID: ev.ID, Time: ev.Time.UTC().Format(time.RFC3339Nano), Type: typ, Subject: subject,
		Change: r.EventName, StoredAt: r.Change.ApproximateCreationDateTime.UTC().Format(time.RFC3339),
		Seq: r.Change.SequenceNumber, Event: body, day: ev.Time.UTC().Truncate(24 * time.Hour),
	}, nil
}
