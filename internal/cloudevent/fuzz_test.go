package cloudevent

import (
	"encoding/json"
	"errors"
	"testing"
)

// FuzzParse: no input panics; every rejection is a FieldError; every
// accepted event normalises to valid JSON that parses again to the same
// event.
func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"id":"1","source":"s","type":"t","data":{"n":12345678901234567890}}`))
	f.Add([]byte(`{"id":"1","source":"s","type":"t","time":"2026-11-22T11:00:00+01:00","x":[1,{"y":null}]}`))
	f.Add([]byte(`[{"id":"1"}]`))
	f.Add([]byte(`{"id":"1","id":"2"}`))
	f.Add([]byte("\xff"))
	f.Fuzz(func(t *testing.T, raw []byte) {
		ev, err := Parse(raw, now, now, lim)
		if err != nil {
			var fe *FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("error %v is not a FieldError", err)
			}
			return
		}
		if !json.Valid(ev.JSON) {
			t.Fatalf("normalised %q is not JSON", ev.JSON)
		}
		again, err := Parse(ev.JSON, now, now, Limits{Retention: lim.Retention})
		if err != nil || again.ID != ev.ID || again.Source != ev.Source || !again.Time.Equal(ev.Time) || string(again.JSON) != string(ev.JSON) {
			t.Fatalf("normalised event does not parse to itself: %q -> %v %q", ev.JSON, err, again.JSON)
		}
		_, _, _ = Split(raw)
	})
}
