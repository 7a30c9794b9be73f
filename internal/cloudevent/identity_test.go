package cloudevent

import (
	"errors"
	"strings"
	"testing"
)

// TestParseRefusesLoneSurrogates: a \u escape of half a UTF-16 surrogate
// pair is no character; encoding/json (and so the key) reads every one of
// them as U+FFFD, which would make "\ud800" and "\udbff" the same id. They
// are refused in id and source, naming the field; proper pairs, and lone
// surrogates elsewhere in the event, are kept.
func TestParseRefusesLoneSurrogates(t *testing.T) {
	for _, c := range []struct{ raw, field string }{
		{`{"id":"\ud800","source":"s","type":"t"}`, "id"},
		{`{"id":"\udbff","source":"s","type":"t"}`, "id"},
		{`{"id":"a\uDC00b","source":"s","type":"t"}`, "id"},
		{`{"id":"\ud800\u0041","source":"s","type":"t"}`, "id"},
		{`{"id":"\udc00\ud800","source":"s","type":"t"}`, "id"},
		{`{"id":"x\ud83d","source":"s","type":"t"}`, "id"},
		{`{"id":"1","source":"\ud800","type":"t"}`, "source"},
		{`{"id":"1","source":"a\\\ud800","type":"t"}`, "source"},
	} {
		_, err := Parse([]byte(c.raw), now, now, lim)
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != c.field || !strings.Contains(fe.Problem, "surrogate") {
			t.Errorf("Parse(%s) = %v; want a %s error about a lone surrogate", c.raw, err, c.field)
		}
	}
	for _, raw := range []string{
		`{"id":"\ud83d\ude00","source":"\uD83D\uDE00","type":"t"}`, // a pair: 😀
		`{"id":"\\ud800","source":"s","type":"t"}`,                 // an escaped backslash, then "ud800"
		`{"id":"1","source":"s","type":"t","subject":"\ud800","data":"\udbff"}`,
	} {
		if _, err := Parse([]byte(raw), now, now, lim); err != nil {
			t.Errorf("Parse(%s) = %v; want it accepted", raw, err)
		}
	}
}

// TestParseRefusesAttributeNamesOutsideAZ09: CloudEvents attribute names
// are lower-case letters and digits (core spec 1.0.2, "Attribute Naming
// Convention"). "ID" beside "id" would be two members to encoding/json and
// one attribute to a case-insensitive reader; either could be taken for the
// event's id. The error names the attribute and what to do.
func TestParseRefusesAttributeNamesOutsideAZ09(t *testing.T) {
	for _, c := range []struct{ raw, field, hint string }{
		{`{"id":"1","ID":"2","source":"s","type":"t"}`, "ID", `did you mean "id"`},
		{`{"Id":"1","source":"s","type":"t"}`, "Id", `did you mean "id"`},
		{`{"id":"1","source":"s","type":"t","traceParent":"00"}`, "traceParent", `did you mean "traceparent"`},
		{`{"id":"1","source":"s","type":"t","my_ext":"x"}`, "my_ext", "a-z"},
		{`{"id":"1","source":"s","type":"t","x-ext":"x"}`, "x-ext", "a-z"},
		{`{"id":"1","source":"s","type":"t","DATA":{}}`, "DATA", `did you mean "data"`},
		{`{"id":"1","source":"s","type":"t","Data_Base64":"AA=="}`, "Data_Base64", `did you mean "data_base64"`},
		{`{"id":"1","source":"s","type":"t","é":"x"}`, "é", "a-z"},
		{`{"id":"1","source":"s","type":"t","\u0130d":"x"}`, "İd", "a-z"},
		{`{"id":"1","source":"s","type":"t","":"x"}`, "event", "empty"},
		{`{"id":"1","source":"s","type":"t","` + strings.Repeat("N", 300) + `":"x"}`, strings.Repeat("N", 64) + "…", "a-z"},
	} {
		_, err := Parse([]byte(c.raw), now, now, lim)
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != c.field || !strings.Contains(fe.Problem, c.hint) {
			t.Errorf("Parse(%.90s) = %v; want an error naming %q that says %q", c.raw, err, c.field, c.hint)
		}
	}
	raw := `{"id":"1","source":"s","type":"t","traceparent":"00","ext2":"x","data_base64":"AA==","datacontenttype":"a/b"}`
	if _, err := Parse([]byte(raw), now, now, lim); err != nil {
		t.Errorf("Parse(%s) = %v; want it accepted", raw, err)
	}
}
