package producer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"
)

// event is one CloudEvent ready to send: its JSON with an id and a time.
type event struct {
	id   string
	data []byte
}

// Stamp returns ev's JSON (ev as Put and Send take it) with an id (a
// UUIDv7) and a time (now) when it has none, and its id: what Put and Send
// would send. Stamp first to know an event's id before it is sent; Put and
// Send leave a stamped event as it is.
func Stamp(ev any, now time.Time) (id string, data []byte, err error) {
	e, err := prepare(ev, now)
	return e.id, e.data, err
}

// prepare encodes ev (a json.RawMessage, []byte, string of JSON, or any
// value encoding/json makes a JSON object of) and gives it an id and a time
// when it has none. The other members are kept byte for byte.
func prepare(ev any, now time.Time) (event, error) {
	raw, err := encode(ev)
	if err != nil {
		return event{}, err
	}
	var members map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&members); err != nil {
		return event{}, fmt.Errorf("producer: event is not a JSON object: %w", err)
	}
	if members == nil {
		return event{}, fmt.Errorf("producer: event is null, not a JSON object")
	}
	id, changed, err := stamp(members, now)
	if err != nil {
		return event{}, err
	}
	if !changed {
		return event{id: id, data: compact(raw)}, nil
	}
	out, err := marshal(members)
	if err != nil {
		return event{}, fmt.Errorf("producer: encode event: %w", err)
	}
	return event{id: id, data: out}, nil
}

func encode(ev any) ([]byte, error) {
	switch v := ev.(type) {
	case json.RawMessage:
		return v, nil
	case []byte:
		return v, nil
	case string:
		return []byte(v), nil
	}
	b, err := marshal(ev)
	if err != nil {
		return nil, fmt.Errorf("producer: encode event: %w", err)
	}
	return b, nil
}

// stamp sets members' id and time when they are absent, null or "", and
// returns the id.
func stamp(members map[string]json.RawMessage, now time.Time) (string, bool, error) {
	changed := false
	var id string
	if raw, ok := members["id"]; ok && !isEmpty(raw) {
		if err := json.Unmarshal(raw, &id); err != nil {
			return "", false, fmt.Errorf("producer: id: is not a string: %s", raw)
		}
	} else {
		u, err := uuid.NewV7()
		if err != nil {
			return "", false, fmt.Errorf("producer: id: make a UUIDv7: %w", err)
		}
		id = u.String()
		members["id"], _ = json.Marshal(id)
		changed = true
	}
	if raw, ok := members["time"]; !ok || isEmpty(raw) {
		members["time"], _ = json.Marshal(now.UTC().Format(time.RFC3339Nano))
		changed = true
	}
	return id, changed, nil
}

func isEmpty(raw json.RawMessage) bool {
	s := string(bytes.TrimSpace(raw))
	return s == "" || s == "null" || s == `""`
}

func compact(raw []byte) []byte {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return raw
	}
	return b.Bytes()
}

// marshal is json.Marshal without HTML escaping, so that "<" in data stays
// "<" rather than becoming "\u003c".
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}
