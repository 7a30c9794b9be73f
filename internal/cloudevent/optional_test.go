package cloudevent

import (
	"errors"
	"strings"
	"testing"
)

// TestOptionalAttributesHaveTheirForm: subject, datacontenttype and
// dataschema, when present, are non-empty (core spec 1.0.2); subject is at
// most MaxAttrBytes, the most the query's subject filter takes; and
// datacontenttype is an RFC 2046 media type. null leaves them out.
func TestOptionalAttributesHaveTheirForm(t *testing.T) {
	base := `{"id":"1","source":"s","type":"t",`
	refused := []struct{ member, field, says string }{
		{`"subject":""`, "subject", "empty"},
		{`"datacontenttype":""`, "datacontenttype", "empty"},
		{`"dataschema":""`, "dataschema", "empty"},
		{`"subject":"` + strings.Repeat("s", MaxAttrBytes+1) + `"`, "subject", "257 bytes; the limit is 256"},
		{`"subject":"` + strings.Repeat(`\u00e9`, MaxAttrBytes/2+1) + `"`, "subject", "258 bytes"}, // bytes of UTF-8, as the filter counts them
		{`"datacontenttype":"xyz"`, "datacontenttype", `"xyz", which is not a media type`},
		{`"datacontenttype":"text/"`, "datacontenttype", "not a media type"},
	}
	for _, c := range refused {
		_, err := Parse([]byte(base+c.member+`}`), now, now, lim)
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != c.field || !strings.Contains(fe.Problem, c.says) {
			t.Errorf("%.60s: error %v, want %s: ...%s...", c.member, err, c.field, c.says)
		}
	}
	accepted := []string{
		`"subject":"` + strings.Repeat("s", MaxAttrBytes) + `"`,
		`"subject":"` + strings.Repeat(`\u00e9`, MaxAttrBytes/2) + `"`,
		`"subject":null,"datacontenttype":null,"dataschema":null`,
		`"datacontenttype":"text/plain"`,
		`"datacontenttype":"application/json; charset=utf-8"`,
		`"datacontenttype":"application/vnd.example+json;v=2"`,
		`"dataschema":"https://cloudevents.io/dataschema"`,
	}
	for _, m := range accepted {
		if _, err := Parse([]byte(base+m+`}`), now, now, lim); err != nil {
			t.Errorf("%.60s: %v", m, err)
		}
	}
}

// TestEchoedValuesAreBounded: an error quotes at most 64 bytes of a value
// the event sent, and says how long it was.
func TestEchoedValuesAreBounded(t *testing.T) {
	long := strings.Repeat("<", 60000)
	for _, c := range []struct{ member, field string }{
		{`"time":"` + long + `"`, "time"},
		{`"specversion":"` + long + `"`, "specversion"},
		{`"datacontenttype":"` + long + `"`, "datacontenttype"},
	} {
		_, err := Parse([]byte(`{"id":"1","source":"s","type":"t",`+c.member+`}`), now, now, Limits{})
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != c.field {
			t.Fatalf("%s: %v", c.field, err)
		}
		if len(err.Error()) > 400 || !strings.Contains(fe.Problem, "(the first 64 of 60000 bytes)") {
			t.Errorf("%s: a %d-byte error: %.200s", c.field, len(err.Error()), err)
		}
	}
	_, err := Parse([]byte(`{"id":"1","source":"s","type":"t","`+strings.Repeat("A", 60000)+`":1}`), now, now, Limits{})
	if err == nil || len(err.Error()) > 400 {
		t.Errorf("a long upper-case name: a %d-byte error", len(err.Error()))
	}
}
