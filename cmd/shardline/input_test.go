package main

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestInputNamesTheBadLine: a bad line of NDJSON is named by its own
// number, even when the decoder finds the fault on the next line (a value
// cut short runs into the next one); the message then says where too.
func TestInputNamesTheBadLine(t *testing.T) {
	ok := `{"id":"a","source":"s","type":"t"}`
	for _, c := range []struct{ bad, want string }{
		{`{"id": "b-2"`, `m.ndjson:2: not JSON: invalid character '{' after object key:value pair (found on line 3; is the value that begins here cut short?)`},
		{`{"id":"x"`, `m.ndjson:2: not JSON: `},
		{`{`, `m.ndjson:2: not JSON: `},
		{`tru`, `m.ndjson:2: not JSON: invalid character '\n' in literal true`},
		{`"unterminated`, `m.ndjson:2: not JSON: invalid character '\n' in string literal`},
		{`not json`, `m.ndjson:2: not JSON: invalid character 'o' in literal null (expecting 'u')`},
		{`{"id":"x",}`, `m.ndjson:2: not JSON: invalid character '}'`},
		{`   {"a":1}}`, `m.ndjson:2: not JSON: invalid character '}' looking for beginning of value`},
		{`[1,`, `m.ndjson:2: the input ends inside the JSON value that begins here`},
	} {
		in := ok + "\n" + c.bad + "\n" + ok + "\n"
		tl := &tally{stderr: &strings.Builder{}, start: time.Now()}
		err := readInput(context.Background(), "m.ndjson", strings.NewReader(in), func(inputEvent) error { return nil }, tl)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("bad line %q: %v; want %q", c.bad, err, c.want)
		}
	}
	// After blank lines, and far into a large input: the same.
	in := strings.Repeat(ok+"\n", 5000) + "\n\n  \n" + `{"id": "late"` + "\n" + ok + "\n"
	tl := &tally{stderr: &strings.Builder{}, start: time.Now()}
	err := readInput(context.Background(), "big.ndjson", strings.NewReader(in), func(inputEvent) error { return nil }, tl)
	if err == nil || !strings.HasPrefix(err.Error(), "big.ndjson:5004: not JSON: ") || !strings.Contains(err.Error(), "found on line 5005") {
		t.Fatalf("%v; want big.ndjson:5004", err)
	}
}
