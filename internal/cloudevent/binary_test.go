package cloudevent

import (
	"errors"
	"strings"
	"testing"
)

// TestFromBinaryHeaders: header names in any case, values unquoted and
// percent-decoded once (HTTP protocol binding 1.0.2, 3.1.3.2), extensions
// kept as strings, Content-Type as datacontenttype.
func TestFromBinaryHeaders(t *testing.T) {
	header := map[string]string{
		"Ce-Specversion": "1.0",
		"ce-id":          "order%20%2342%25", // "order #42%"
		"CE-SOURCE":      "/shop/eu",         // percent-encoding is optional for printable ASCII
		"ce-type":        "com.example.order",
		"ce-subject":     "Euro%20%E2%82%AC%20%f0%9f%98%80", // the spec's example, in lower-case hex
		"ce-time":        " 2026-11-22T11:00:00Z\t",         // optional whitespace around the value
		"ce-comment":     `"a \"quoted\" string"`,           // an older sender's quoted-string
		"ce-plus":        "a+b",                             // + is not a space here
		"ce-count":       "5",                               // an integer extension: a string in a header
		"Content-Type":   "application/json; charset=utf-8",
		"Accept":         "*/*",
	}
	raw, err := FromBinary(header, []byte(" {\"n\": 12345678901234567890}\n"))
	if err != nil {
		t.Fatal(err)
	}
	ev, err := ParseElement(raw, now, now, lim)
	if err != nil {
		t.Fatalf("ParseElement(%s): %v", raw, err)
	}
	want := `{"specversion":"1.0","id":"order #42%","source":"/shop/eu","type":"com.example.order","time":"2026-11-22T11:00:00Z",` +
		`"subject":"Euro € 😀","datacontenttype":"application/json; charset=utf-8","comment":"a \"quoted\" string",` +
		`"count":"5","plus":"a+b","data":{"n":12345678901234567890}}`
	if ev.JSON != want {
		t.Fatalf("normalised\n got %s\nwant %s", ev.JSON, want)
	}
}

// TestFromBinaryData: the body is stored as the JSON format says: JSON as
// the JSON value, UTF-8 text as a string, other bytes as data_base64, so
// that reading it back gives the bytes sent.
func TestFromBinaryData(t *testing.T) {
	for _, c := range []struct {
		contentType, body, want string
	}{
		{"application/json", `[1, "x"]`, `"data":[1, "x"]`},
		{"application/vnd.example+json", `{"a":1}`, `"data":{"a":1}`},
		{"text/json", `"s"`, `"data":"s"`},
		{"", `{"a":1}`, `"data":{"a":1}`}, // no media type: JSON, as the JSON format assumes
		{"", "not json", `"data_base64":"bm90IGpzb24="`},
		{"text/plain", "grüße <b>&</b>\n", `"data":"grüße <b>&</b>\n"`},
		{"text/csv; charset=UTF-8", "a,b", `"data":"a,b"`},
		{"application/xml", "<a/>", `"data":"<a/>"`},
		{"application/x-custom; charset=us-ascii", "abc", `"data":"abc"`},
		{"text/plain; charset=iso-8859-1", "gr\xfc\xdfe", `"data_base64":"Z3L832U="`}, // not UTF-8: kept as bytes
		{"text/plain", "\xff\xfe", `"data_base64":"//4="`},
		{"application/octet-stream", "abc", `"data_base64":"YWJj"`},
		{"image/png", "\x89PNG", `"data_base64":"iVBORw=="`},
		{"application/json", "", `"datacontenttype":"application/json"`}, // no body, no data
	} {
		header := map[string]string{"ce-specversion": "1.0", "ce-id": "1", "ce-source": "s", "ce-type": "t"}
		if c.contentType != "" {
			header["content-type"] = c.contentType
		}
		raw, err := FromBinary(header, []byte(c.body))
		if err != nil || !strings.HasSuffix(string(raw), c.want+"}") {
			t.Errorf("%q %q: %s %v; want it to end %s", c.contentType, c.body, raw, err, c.want)
			continue
		}
		if _, err := ParseElement(raw, now, now, lim); err != nil {
			t.Errorf("%q %q: ParseElement(%s): %v", c.contentType, c.body, raw, err)
		}
	}
}

// TestFromBinaryRefuses: each error names the header or the body at fault,
// and the event is still returned whole, for the quarantine.
func TestFromBinaryRefuses(t *testing.T) {
	base := func() map[string]string {
		return map[string]string{"ce-specversion": "1.0", "ce-id": "1", "ce-source": "s", "ce-type": "t", "content-type": "text/plain"}
	}
	for _, c := range []struct {
		edit        func(map[string]string)
		body, field string
	}{
		{func(h map[string]string) { h["ce-id"] = "50%" }, "x", "ce-id"},
		{func(h map[string]string) { h["ce-id"] = "%zz" }, "x", "ce-id"},
		{func(h map[string]string) { h["ce-source"] = "%C0%A0" }, "x", "ce-source"},    // overlong: the spec says reject
		{func(h map[string]string) { h["ce-source"] = "%ED%A0%80" }, "x", "ce-source"}, // a surrogate, in UTF-8
		{func(h map[string]string) { h["ce-datacontenttype"] = "text/plain" }, "x", "ce-datacontenttype"},
		{func(h map[string]string) { h["content-type"] = "application/json" }, "{nope", "body"},
	} {
		h := base()
		c.edit(h)
		raw, err := FromBinary(h, []byte(c.body))
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != c.field {
			t.Errorf("%v: %v; want an error naming %s", h, err, c.field)
		}
		if !strings.HasPrefix(string(raw), `{"specversion":"1.0","id":`) || !strings.HasSuffix(string(raw), "}") {
			t.Errorf("%v: event %s not returned whole", h, raw)
		}
	}
	for field, want := range map[string]string{"id": "ce-id", "traceparent": "ce-traceparent", "datacontenttype": "Content-Type",
		"data": "body", "data_base64": "body", "event": "event"} {
		if got := BinaryField(field); got != want {
			t.Errorf("BinaryField(%s) = %s, want %s", field, got, want)
		}
	}
}
