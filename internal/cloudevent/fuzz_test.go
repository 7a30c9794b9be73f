package cloudevent

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"mime"
	"reflect"
	"strings"
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

// FuzzFromBinary: whatever the headers and body, FromBinary returns a JSON
// object (so that a refused event can be quarantined), every error is a
// FieldError, and the data stored as a string or as data_base64 is the body
// byte for byte.
func FuzzFromBinary(f *testing.F) {
	f.Add("ord%2F1", "x", "application/json", []byte(`{"n":1}`))
	f.Add(`"a \"b\""`, "%C0%A0", "text/plain; charset=utf-8", []byte("gr\xc3\xbc\xc3\x9fe"))
	f.Add("50%", "\xff", "application/octet-stream", []byte{0, 0xff})
	f.Add("1", "v", "", []byte("not json"))
	f.Add("1", "v", "text/plain; charset=latin1", []byte("\xe9"))
	f.Add("1", "v", "", []byte(`"abc"`))
	f.Fuzz(func(t *testing.T, id, ext, contentType string, body []byte) {
		header := map[string]string{"ce-specversion": "1.0", "ce-id": id, "ce-source": "s", "ce-type": "t", "ce-ext": ext}
		if contentType != "" {
			header["Content-Type"] = contentType
		}
		raw, err := FromBinary(header, body)
		var fe *FieldError
		if err != nil && !errors.As(err, &fe) {
			t.Fatalf("error %v is not a FieldError", err)
		}
		var ev map[string]json.RawMessage
		if json.Unmarshal(raw, &ev) != nil {
			t.Fatalf("FromBinary(%v, %q) = %q, not a JSON object", header, body, raw)
		}
		if err != nil {
			return
		}
		var got []byte
		var s string
		switch {
		case ev["data_base64"] != nil:
			_ = json.Unmarshal(ev["data_base64"], &s)
			got, _ = base64.StdEncoding.DecodeString(s)
		case ev["data"] != nil && (strings.Trim(contentType, " \t") == "" || jsonMedia(mediaType(contentType))):
			return // JSON data: kept as the JSON value, compared by FuzzParse's differential check
		case ev["data"] != nil:
			if err := json.Unmarshal(ev["data"], &s); err != nil {
				t.Fatalf("text data %s is not a JSON string", ev["data"])
			}
			got = []byte(s)
		}
		if !bytes.Equal(got, body) {
			t.Fatalf("data of %q (%q) reads back as %q", body, contentType, got)
		}
	})
}

func mediaType(ct string) string {
	mt, _, _ := mime.ParseMediaType(ct)
	return mt
}
