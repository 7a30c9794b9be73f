// Package cloudevent parses and validates CloudEvents 1.0 in JSON structured
// mode, and normalises them for storage: attributes checked, time in RFC 3339
// UTC, data and extension attributes kept byte for byte. FromBinary turns an
// event sent in the HTTP binary content mode into the same JSON form.
package cloudevent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"
	"unicode/utf8"
)

// Defaults of Limits.
const (
	DefaultMaxBytes  = 64 << 10
	DefaultRetention = 30 * 24 * time.Hour
	MaxFuture        = 5 * time.Minute
	// MaxBytesLimit is the largest MaxBytes allowed: an event of this size
	// still fits a 400 KB DynamoDB item with its keys and attributes.
	MaxBytesLimit = 350_000
	// MaxAttrBytes bounds source, id and type.
	MaxAttrBytes = 256
)

// Limits bound what Parse accepts.
type Limits struct {
	MaxBytes  int           // largest event, in bytes of JSON as received
	Retention time.Duration // oldest time accepted, counted back from now
}

// Event is a validated, normalised CloudEvent.
type Event struct {
	ID      string
	Source  string
	Type    string
	Subject string // empty when the event has none
	Time    time.Time
	Stamped bool   // Time was absent and stamped by the pipeline
	JSON    string // the normalised event, compact JSON
}

// FieldError is a validation failure, naming the field at fault.
type FieldError struct {
	Field   string // "id", "time", ... or "event" for the whole event
	Problem string
}

// Error reads "field: problem".
func (e *FieldError) Error() string { return e.Field + ": " + e.Problem }

func fieldErr(field, format string, args ...any) error {
	return &FieldError{Field: field, Problem: fmt.Sprintf(format, args...)}
}

// Split reads a body that holds one event or a JSON array of events (a
// CloudEvents batch is such an array) and returns each event's raw JSON;
// array says which of the two it was. It fails only when the body as a whole
// is not JSON. The events it returns are checked JSON: give them to
// ParseElement.
func Split(body []byte) (events []json.RawMessage, array bool, err error) {
	return AppendSplit(nil, body)
}

// AppendSplit is Split appending the events to dst, so that a caller
// splitting record after record can reuse one slice.
func AppendSplit(dst []json.RawMessage, body []byte) (events []json.RawMessage, array bool, err error) {
	events = dst
	trimmed := bytes.TrimLeft(body, " \t\r\n")
	if len(trimmed) == 0 {
		return dst, false, fieldErr("body", "is empty; send a CloudEvent or a JSON array of them")
	}
	if !utf8.Valid(body) {
		return dst, false, fieldErr("body", "is not valid UTF-8")
	}
	if !validJSON(body) {
		what := "JSON"
		if trimmed[0] == '[' {
			what = "a valid JSON array"
		}
		return dst, trimmed[0] == '[', fieldErr("body", "is not %s: %s", what, notJSON(body))
	}
	if trimmed[0] != '[' {
		return append(events, bytes.TrimRight(trimmed, " \t\r\n")), false, nil
	}
	// A valid array: its elements end where skipValue says.
	for p := skipSpace(trimmed, 1); p < len(trimmed) && trimmed[p] != ']'; {
		end := skipValue(trimmed, p)
		events = append(events, trimmed[p:end])
		p = skipSpace(trimmed, end)
		if trimmed[p] == ',' {
			p = skipSpace(trimmed, p+1)
		}
	}
	return events, true, nil
}

func syntaxErr(b []byte) error {
	var v any
	return json.Unmarshal(b, &v)
}

// Parse validates one raw event and normalises it. now is the current time
// and stamp the time to give an event that has none. The error, when not nil,
// is a *FieldError.
//
// Parse is on the hot path of ingestion: it checks the event with
// validJSON (which allocates nothing), splits the object's members without
// decoding them, and writes the normalised event in one buffer whose string
// also backs the event's id, source, type and subject.
func Parse(raw []byte, now, stamp time.Time, lim Limits) (Event, error) {
	if lim.MaxBytes > 0 && len(raw) > lim.MaxBytes {
		return Event{}, fieldErr("event", "is %d bytes; the limit is %d", len(raw), lim.MaxBytes)
	}
	if !utf8.Valid(raw) {
		return Event{}, fieldErr("event", "is not valid UTF-8")
	}
	if !validJSON(raw) {
		return Event{}, fieldErr("event", "is not valid JSON: %s", notJSON(raw))
	}
	return ParseElement(raw, now, stamp, lim)
}

// ParseElement is Parse for an event that Split returned, which is already
// known to be valid UTF-8 and valid JSON: the checks are not repeated.
func ParseElement(raw []byte, now, stamp time.Time, lim Limits) (Event, error) {
	if lim.MaxBytes > 0 && len(raw) > lim.MaxBytes {
		return Event{}, fieldErr("event", "is %d bytes; the limit is %d", len(raw), lim.MaxBytes)
	}
	var buf [24]member
	ms, ok := members(raw, buf[:])
	if !ok {
		return Event{}, fieldErr("event", "must be a JSON object")
	}
	a, err := indexAttrs(ms)
	if err != nil {
		return Event{}, err
	}
	if err := checkAttrs(ms, a); err != nil {
		return Event{}, err
	}
	t, stamped, err := eventTime(ms, a, now, stamp, lim)
	if err != nil {
		return Event{}, err
	}
	return normalise(ms, a, t, stamped, len(raw)), nil
}
