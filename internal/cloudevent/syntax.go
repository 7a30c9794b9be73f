package cloudevent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// notJSON says, for a person, how b fails to be JSON: where it goes wrong
// and what is there, rather than the decoder's grammar ("invalid character
// 'x' in literal true (expecting 'r')"). b is not valid JSON.
func notJSON(b []byte) string {
	if !utf8.Valid(b) {
		bad := 0
		for bad < len(b) {
			r, size := utf8.DecodeRune(b[bad:])
			if r == utf8.RuneError && size <= 1 {
				break
			}
			bad += size
		}
		return fmt.Sprintf("it is not valid UTF-8, from byte %d of %d", bad+1, len(b))
	}
	var se *json.SyntaxError
	if err := syntaxErr(b); !errors.As(err, &se) || strings.HasPrefix(se.Error(), "unexpected end") {
		return fmt.Sprintf("it ends after %d bytes, before its JSON value is complete (cut short?)", len(b))
	}
	at := min(max(int(se.Offset)-1, 0), len(b)-1) // the byte the decoder could not take
	first := len(b) - len(bytes.TrimLeft(b, " \t\r\n"))
	switch {
	case at <= first:
		return fmt.Sprintf("it begins %s, and JSON begins with {, [, a quote, a digit, true, false or null", snippet(b[first:], 24))
	case json.Valid(b[:at]):
		return fmt.Sprintf("it holds more than one JSON value (the first ends before byte %d, then %s): send one event, or a JSON array of them", at+1, describeByte(b, at))
	}
	return fmt.Sprintf("it goes wrong at byte %d of %d: %s after %s", at+1, len(b), describeByte(b, at), tail(b[:at], 24))
}

// describeByte names the character at b[at] for a person.
func describeByte(b []byte, at int) string {
	r, _ := utf8.DecodeRune(b[at:])
	switch {
	case r == '\n':
		return "a line break"
	case r == '\t':
		return "a tab"
	case r < 0x20 || r == 0x7f:
		return fmt.Sprintf("the control character %U", r)
	}
	return fmt.Sprintf("%q", r)
}

// snippet is the first n bytes or so of b, quoted, marked when cut.
func snippet(b []byte, n int) string {
	if len(b) <= n {
		return fmt.Sprintf("%q", b)
	}
	for n < len(b) && !utf8.RuneStart(b[n]) {
		n++
	}
	return fmt.Sprintf("%q...", b[:n])
}

// tail is the last n bytes or so of b, quoted, marked when cut.
func tail(b []byte, n int) string {
	if len(b) <= n {
		return fmt.Sprintf("%q", b)
	}
	i := len(b) - n
	for i < len(b) && !utf8.RuneStart(b[i]) {
		i++
	}
	return fmt.Sprintf("...%q", b[i:])
}
