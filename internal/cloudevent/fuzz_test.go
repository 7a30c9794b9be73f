package cloudevent

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"time"
)

// FuzzParse: no input panics; every rejection is a FieldError; every
// accepted event normalises to valid JSON that parses again to the same
// event.
func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"id":"1","source":"s","type":"t","data":{"n":12345678901234567890}}`))
	f.Add([]byte(`{"id":"1","source":"s","type":"t","time":"2026-11-22T11:00:00+01:00","x":[1,{"y":null}]}`))
	f.Add([]byte(`[{"id":"1"}]`))
	f.Add([]byte(` [ {"id":"1"} , 5 ,"x", [1,[2]] , null ] `))
	f.Add([]byte(`{"id":"1","id":"2"}`))
	f.Add([]byte("\xff"))
	f.Add([]byte(`{"\u0069d":"1","source":"s\"q","type":"t\u00e9","subject":null,"x":{"a" : [ 1 , "b\\" ] }}`))
	f.Add([]byte(`{"id":"1","source":"s","type":"t","\u0069d":"2"}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		if evs, array, err := Split(raw); err == nil && array {
			var ref []json.RawMessage
			if json.Unmarshal(raw, &ref) != nil || len(ref) != len(evs) {
				t.Fatalf("Split found %d elements in %q; encoding/json %d", len(evs), raw, len(ref))
			}
			for i := range ref {
				if !bytes.Equal(bytes.TrimSpace(ref[i]), evs[i]) {
					t.Fatalf("element %d: %q vs %q", i, evs[i], ref[i])
				}
			}
		}
		ev, err := Parse(raw, now, now, lim)
		if err != nil {
			var fe *FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("error %v is not a FieldError", err)
			}
			return
		}
		if !json.Valid([]byte(ev.JSON)) {
			t.Fatalf("normalised %q is not JSON", ev.JSON)
		}
		again, err := Parse([]byte(ev.JSON), now, now, Limits{Retention: lim.Retention})
		if err != nil || again.ID != ev.ID || again.Source != ev.Source || !again.Time.Equal(ev.Time) || again.JSON != ev.JSON {
			t.Fatalf("normalised event does not parse to itself: %q -> %v %q", ev.JSON, err, again.JSON)
		}
		// Differential check against encoding/json: the normalised event holds
		// exactly the members received, but for the normalised time and
		// specversion and the optional attributes sent as null.
		in, out := decodeMap(t, raw), decodeMap(t, []byte(ev.JSON))
		in["specversion"] = "1.0"
		in["time"] = ev.Time.Format(time.RFC3339Nano)
		for _, k := range []string{"subject", "datacontenttype", "dataschema", "data_base64"} {
			if v, ok := in[k]; ok && v == nil {
				delete(in, k)
			}
		}
		if !reflect.DeepEqual(in, out) {
			t.Fatalf("normalised %q\n from %q\n differ: %v vs %v", ev.JSON, raw, in, out)
		}
		if ev.ID != in["id"] || ev.Source != in["source"] || ev.Type != in["type"] {
			t.Fatalf("attributes %q %q %q differ from %v", ev.ID, ev.Source, ev.Type, in)
		}
		// Split then ParseElement, the ingest path, agrees with Parse.
		if evs, array, err := Split(raw); err != nil || array || len(evs) != 1 {
			t.Fatalf("Split of an accepted event: %v %v %d", err, array, len(evs))
		} else if e2, err := ParseElement(evs[0], now, now, lim); err != nil || e2.JSON != ev.JSON {
			t.Fatalf("ParseElement after Split: %v %q", err, e2.JSON)
		}
	})
}

func decodeMap(t *testing.T, b []byte) map[string]any {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var m map[string]any
	if err := d.Decode(&m); err != nil {
		t.Fatalf("encoding/json cannot decode %q: %v", b, err)
	}
	return m
}
