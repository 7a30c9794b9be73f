package cloudevent

import (
	"strings"
	"testing"
	"time"
)

// TestNotJSONReadsForAPerson: a body or record that is not JSON is refused
// with where it goes wrong and what is there, not the decoder's grammar.
func TestNotJSONReadsForAPerson(t *testing.T) {
	for in, want := range map[string]string{
		`hello, world`:        `body: is not JSON: it begins "hello, world", and JSON begins with {, [, a quote, a digit, true, false or null`,
		`tx`:                  `body: is not JSON: it goes wrong at byte 2 of 2: 'x' after "t"`,
		`{"id":`:              `body: is not JSON: it ends after 6 bytes, before its JSON value is complete (cut short?)`,
		`{"id":"1"}` + "\n{}": `body: is not JSON: it holds more than one JSON value (the first ends before byte 12, then '{'): send one event, or a JSON array of them`,
		`{"id":"1",` + "\n}":  `body: is not JSON: it goes wrong at byte 12 of 12: '}' after "{\"id\":\"1\",\n"`,
		"{\"id\":\"a\tb\"}":   `body: is not JSON: it goes wrong at byte 9 of 12: a tab after "{\"id\":\"a"`,
		`[{"id":"1"},`:        `body: is not a valid JSON array: it ends after 12 bytes, before its JSON value is complete (cut short?)`,
		`{"data":"` + strings.Repeat("x", 40) + `"]`: `body: is not JSON: it goes wrong at byte 51 of 51: ']' after ..."xxxxxxxxxxxxxxxxxxxxxxx\""`,
	} {
		_, _, err := Split([]byte(in))
		if err == nil || err.Error() != want {
			t.Errorf("%q:\n got %v\nwant %s", in, err, want)
		}
	}
	if _, err := Parse([]byte(`{"id": nope}`), time.Now(), time.Now(), Limits{}); err == nil ||
		err.Error() != `event: is not valid JSON: it goes wrong at byte 9 of 12: 'o' after "{\"id\": n"` {
		t.Errorf("Parse: %v", err)
	}
}
