// Package cloudevent parses and validates CloudEvents 1.0 in JSON structured
// mode, and normalises them for storage: attributes checked, time in RFC 3339
// UTC, data and extension attributes kept byte for byte.
package cloudevent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
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
	JSON    []byte // the normalised event, compact JSON
}

// FieldError is a validation failure, naming the field at fault.
type FieldError struct {
	Field   string // "id", "time", ... or "event" for the whole event
	Problem string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Problem }

func fieldErr(field, format string, args ...any) error {
	return &FieldError{Field: field, Problem: fmt.Sprintf(format, args...)}
}

// Split reads a body that holds one event or a JSON array of events (a
// CloudEvents batch is such an array) and returns each event's raw JSON.
// array says which of the two it was. It fails only when the body as a whole
// is not JSON.
func Split(body []byte) (events []json.RawMessage, array bool, err error) {
	trimmed := bytes.TrimLeft(body, " \t\r\n")
	if len(trimmed) == 0 {
		return nil, false, fieldErr("body", "is empty; send a CloudEvent or a JSON array of them")
	}
	if !utf8.Valid(body) {
		return nil, false, fieldErr("body", "is not valid UTF-8")
	}
	if trimmed[0] != '[' {
		if !json.Valid(body) {
			return nil, false, fieldErr("body", "is not valid JSON: %v", syntaxErr(body))
		}
		return []json.RawMessage{trimmed}, false, nil
	}
	var list []json.RawMessage
	if err := json.Unmarshal(body, &list); err != nil {
		return nil, true, fieldErr("body", "is not a valid JSON array: %v", err)
	}
	return list, true, nil
}

func syntaxErr(b []byte) error {
	var v any
	return json.Unmarshal(b, &v)
}

// Attributes with fixed meaning in CloudEvents 1.0.
var stringAttrs = []string{"id", "source", "type", "specversion", "time", "subject", "datacontenttype", "dataschema", "data_base64"}

// Parse validates one raw event and normalises it. now is the current time
// and stamp the time to give an event that has none. The error, when not nil,
// is a *FieldError.
func Parse(raw []byte, now, stamp time.Time, lim Limits) (Event, error) {
	var ev Event
	if lim.MaxBytes > 0 && len(raw) > lim.MaxBytes {
		return ev, fieldErr("event", "is %d bytes; the limit is %d", len(raw), lim.MaxBytes)
	}
	if !utf8.Valid(raw) {
		return ev, fieldErr("event", "is not valid UTF-8")
	}
	attrs, keys, err := object(raw)
	if err != nil {
		return ev, err
	}
	str := map[string]string{}
	for _, k := range stringAttrs {
		v, ok := attrs[k]
		if !ok {
			continue
		}
		if string(v) == "null" {
			delete(attrs, k)
			continue
		}
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			return ev, fieldErr(k, "must be a string")
		}
		str[k] = s
	}
	for _, k := range []string{"id", "source", "type"} {
		s, ok := str[k]
		switch {
		case !ok || s == "":
			return ev, fieldErr(k, "is required and must be a non-empty string")
		case len(s) > MaxAttrBytes:
			return ev, fieldErr(k, "is %d bytes; the limit is %d", len(s), MaxAttrBytes)
		}
	}
	if v, ok := str["specversion"]; ok && v != "1.0" {
		return ev, fieldErr("specversion", "is %q; only \"1.0\" is supported", v)
	}
	if _, ok := attrs["data"]; ok {
		if _, ok := attrs["data_base64"]; ok {
			return ev, fieldErr("data_base64", "cannot be sent together with data")
		}
	}
	ev.ID, ev.Source, ev.Type, ev.Subject = str["id"], str["source"], str["type"], str["subject"]
	if s, ok := str["time"]; ok {
		t, err := time.Parse(time.RFC3339Nano, s)
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
	ev.JSON, err = normalise(attrs, keys, ev.Time)
	if err != nil {
		return ev, err
	}
	return ev, nil
}

// object decodes a JSON object's members, rejecting duplicate names: which
// of two "id"s is the event's is ambiguous, and an ambiguity in an identity is
// a way to smuggle one event past another's checks.
func object(raw []byte) (map[string]json.RawMessage, []string, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return nil, nil, fieldErr("event", "is not valid JSON: %v", err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, nil, fieldErr("event", "must be a JSON object")
	}
	attrs := make(map[string]json.RawMessage, 10)
	keys := make([]string, 0, 10)
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, nil, fieldErr("event", "is not valid JSON: %v", err)
		}
		k := tok.(string) // object keys are always strings
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, nil, fieldErr("event", "is not valid JSON: %v", err)
		}
		if _, dup := attrs[k]; dup {
			return nil, nil, fieldErr(k, "appears more than once")
		}
		attrs[k] = v
		keys = append(keys, k)
	}
	if _, err := dec.Token(); err != nil {
		return nil, nil, fieldErr("event", "is not valid JSON: %v", err)
	}
	if len(bytes.TrimSpace(raw[dec.InputOffset():])) > 0 {
		return nil, nil, fieldErr("event", "has data after the closing brace")
	}
	return attrs, keys, nil
}

// normalise writes the event back as compact JSON: specversion "1.0", the
// required attributes, time in RFC 3339 UTC, then every other attribute in
// the order received, values byte for byte (compacted, so numbers keep every
// digit).
func normalise(attrs map[string]json.RawMessage, keys []string, t time.Time) ([]byte, error) {
	size := 64
	for k, v := range attrs {
		size += len(k) + len(v) + 4
	}
	var b bytes.Buffer
	b.Grow(size)
	b.WriteString(`{"specversion":"1.0"`)
	for _, k := range []string{"id", "source", "type"} {
		b.WriteString(`,"` + k + `":`)
		if err := json.Compact(&b, attrs[k]); err != nil {
			return nil, fieldErr(k, "is not valid JSON: %v", err)
		}
	}
	b.WriteString(`,"time":"`)
	b.WriteString(t.Format(time.RFC3339Nano))
	b.WriteByte('"')
	for _, k := range keys {
		if slices.Contains([]string{"specversion", "id", "source", "type", "time"}, k) {
			continue
		}
		v, ok := attrs[k]
		if !ok { // dropped null
			continue
		}
		name, _ := json.Marshal(k)
		b.WriteByte(',')
		b.Write(name)
		b.WriteByte(':')
		if err := json.Compact(&b, v); err != nil {
			return nil, fieldErr(fieldName(k), "is not valid JSON: %v", err)
		}
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

func fieldName(k string) string {
	if strings.TrimSpace(k) == "" {
		return "event"
	}
	return k
}
