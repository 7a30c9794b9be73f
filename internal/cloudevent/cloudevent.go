// Package cloudevent parses and validates CloudEvents 1.0 in JSON structured
// mode, and normalises them for storage: attributes checked, time in RFC 3339
// UTC, data and extension attributes kept byte for byte.
package cloudevent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
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
	trimmed := bytes.TrimLeft(body, " \t\r\n")
	if len(trimmed) == 0 {
		return nil, false, fieldErr("body", "is empty; send a CloudEvent or a JSON array of them")
	}
	if !utf8.Valid(body) {
		return nil, false, fieldErr("body", "is not valid UTF-8")
	}
	if !json.Valid(body) {
		what := "JSON"
		if trimmed[0] == '[' {
			what = "a valid JSON array"
		}
		return nil, trimmed[0] == '[', fieldErr("body", "is not %s: %v", what, syntaxErr(body))
	}
	if trimmed[0] != '[' {
		return []json.RawMessage{bytes.TrimRight(trimmed, " \t\r\n")}, false, nil
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
// json.Valid (which allocates nothing), splits the object's members without
// decoding them, and writes the normalised event in one buffer whose string
// also backs the event's id, source, type and subject.
func Parse(raw []byte, now, stamp time.Time, lim Limits) (Event, error) {
	if lim.MaxBytes > 0 && len(raw) > lim.MaxBytes {
		return Event{}, fieldErr("event", "is %d bytes; the limit is %d", len(raw), lim.MaxBytes)
	}
	if !utf8.Valid(raw) {
		return Event{}, fieldErr("event", "is not valid UTF-8")
	}
	if !json.Valid(raw) {
		return Event{}, fieldErr("event", "is not valid JSON: %v", syntaxErr(raw))
	}
	return ParseElement(raw, now, stamp, lim)
}

// ParseElement is Parse for an event that Split returned, which is already
// known to be valid UTF-8 and valid JSON: the checks are not repeated.
func ParseElement(raw []byte, now, stamp time.Time, lim Limits) (Event, error) {
	var ev Event
	if lim.MaxBytes > 0 && len(raw) > lim.MaxBytes {
		return ev, fieldErr("event", "is %d bytes; the limit is %d", len(raw), lim.MaxBytes)
	}
	var buf [24]member
	ms, ok := members(raw, buf[:])
	if !ok {
		return ev, fieldErr("event", "must be a JSON object")
	}
	// Find the attributes with fixed meaning, and refuse duplicate names:
	// which of two "id"s is the event's is ambiguous, and an ambiguity in an
	// identity is a way to smuggle one event past another's checks.
	var id, source, typ, specversion, tm, subject, data, dataB64 = -1, -1, -1, -1, -1, -1, -1, -1
	for i := range ms {
		for j := range i {
			if bytes.Equal(ms[j].name, ms[i].name) {
				return ev, fieldErr(fieldName(string(ms[i].name)), "appears more than once")
			}
		}
		switch string(ms[i].name) {
		case "id":
			id = i
		case "source":
			source = i
		case "type":
			typ = i
		case "specversion":
			specversion = i
		case "time":
			tm = i
		case "subject":
			subject = i
		case "data":
			data = i
		case "data_base64":
			dataB64 = i
		}
		if isNull(ms[i].val) {
			switch string(ms[i].name) {
			case "id", "source", "type", "specversion", "time", "subject", "datacontenttype", "dataschema", "data_base64":
				ms[i].val = nil // an optional attribute set to null is absent
			}
		}
		switch string(ms[i].name) {
		case "id", "source", "type", "specversion", "time", "subject", "datacontenttype", "dataschema", "data_base64":
			if ms[i].val != nil && ms[i].val[0] != '"' {
				return ev, fieldErr(string(ms[i].name), "must be a string")
			}
		}
	}
	for _, a := range []struct {
		name string
		i    int
	}{{"id", id}, {"source", source}, {"type", typ}} {
		switch {
		case a.i < 0 || ms[a.i].val == nil || len(ms[a.i].val) == 2:
			return ev, fieldErr(a.name, "is required and must be a non-empty string")
		case len(unquote(ms[a.i].val)) > MaxAttrBytes:
			return ev, fieldErr(a.name, "is %d bytes; the limit is %d", len(unquote(ms[a.i].val)), MaxAttrBytes)
		}
	}
	if specversion >= 0 && ms[specversion].val != nil && string(unquote(ms[specversion].val)) != "1.0" {
		return ev, fieldErr("specversion", "is %q; only \"1.0\" is supported", unquote(ms[specversion].val))
	}
	if data >= 0 && dataB64 >= 0 && ms[dataB64].val != nil {
		return ev, fieldErr("data_base64", "cannot be sent together with data")
	}
	if tm >= 0 && ms[tm].val != nil {
		s := unquote(ms[tm].val)
		t, err := time.Parse(time.RFC3339Nano, string(s))
		if err != nil {
			return ev, fieldErr("time", "%q is not an RFC 3339 timestamp such as 2006-01-02T15:04:05Z", s)
		}
		ev.Time = t.UTC()
	} else {
		ev.Time, ev.Stamped = stamp.UTC(), true
	}
	if ev.Time.After(now.Add(MaxFuture)) {
		return ev, fieldErr("time", "%s is more than %v in the future", ev.Time.Format(time.RFC3339Nano), MaxFuture)
	}
	if lim.Retention > 0 && !ev.Time.After(now.Add(-lim.Retention)) {
		return ev, fieldErr("time", "%s is older than the retention window of %v", ev.Time.Format(time.RFC3339Nano), lim.Retention)
	}

	// Write the normalised event: specversion "1.0", the required
	// attributes, time in RFC 3339 UTC, then every other attribute in the
	// order received, values byte for byte (compacted: numbers keep every
	// digit).
	var b strings.Builder
	b.Grow(len(raw) + 64)
	b.WriteString(`{"specversion":"1.0"`)
	var at [4][2]int // where id, source, type and subject's values were written
	put := func(name string, i, slot int) {
		b.WriteString(`,"` + name + `":`)
		at[slot][0] = b.Len()
		compact(&b, ms[i].val)
		at[slot][1] = b.Len()
	}
	put("id", id, 0)
	put("source", source, 1)
	put("type", typ, 2)
	b.WriteString(`,"time":"`)
	var tb [40]byte
	b.Write(ev.Time.AppendFormat(tb[:0], time.RFC3339Nano))
	b.WriteByte('"')
	for i, m := range ms {
		if m.val == nil || i == id || i == source || i == typ || i == tm || i == specversion {
			continue
		}
		if i == subject {
			put("subject", i, 3)
			continue
		}
		b.WriteByte(',')
		b.Write(m.key)
		b.WriteByte(':')
		compact(&b, m.val)
	}
	b.WriteByte('}')
	out := b.String()
	ev.JSON = out
	str := func(slot int) string {
		v := out[at[slot][0]:at[slot][1]]
		if len(v) < 2 {
			return ""
		}
		if strings.IndexByte(v, '\\') < 0 {
			return v[1 : len(v)-1] // shares the normalised event's memory
		}
		var s string
		_ = json.Unmarshal([]byte(v), &s)
		return s
	}
	ev.ID, ev.Source, ev.Type = str(0), str(1), str(2)
	if subject >= 0 && ms[subject].val != nil {
		ev.Subject = str(3)
	}
	return ev, nil
}

func isNull(v []byte) bool { return len(v) == 4 && string(v) == "null" }

func fieldName(k string) string {
	if strings.TrimSpace(k) == "" {
		return "event"
	}
	return k
}
