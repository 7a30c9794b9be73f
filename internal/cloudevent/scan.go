package cloudevent

import (
	"bytes"
	"encoding/json"
	"strings"
)

// member is one name/value pair of the event object, as bytes of the input.
type member struct {
	name []byte // the decoded name
	key  []byte // the name as received: a JSON string with its quotes
	val  []byte // the value as received (may hold insignificant whitespace)
}

// members splits a JSON object into its members without decoding values.
// raw must already be known to be valid JSON (validJSON), which lets the
// scan skip all checking; it fails only if raw is not an object. The
// result reuses buf.
func members(raw []byte, buf []member) ([]member, bool) {
	p := skipSpace(raw, 0)
	if p >= len(raw) || raw[p] != '{' {
		return nil, false
	}
	p = skipSpace(raw, p+1)
	ms := buf[:0]
	for p < len(raw) && raw[p] != '}' {
		kEnd := skipString(raw, p)
		key := raw[p:kEnd]
		p = skipSpace(raw, kEnd) + 1 // the colon
		p = skipSpace(raw, p)
		vEnd := skipValue(raw, p)
		ms = append(ms, member{name: unquote(key), key: key, val: raw[p:vEnd]})
		p = skipSpace(raw, vEnd)
		if raw[p] == ',' {
			p = skipSpace(raw, p+1)
		}
	}
	return ms, true
}

func skipSpace(b []byte, p int) int {
	for p < len(b) && (b[p] == ' ' || b[p] == '\t' || b[p] == '\n' || b[p] == '\r') {
		p++
	}
	return p
}

// skipString returns the index after the JSON string starting at p. It
// jumps from quote to quote (bytes.IndexByte is vectorised) and counts the
// backslashes before each to tell an escaped quote from the closing one.
func skipString(b []byte, p int) int {
	for p++; ; {
		i := bytes.IndexByte(b[p:], '"')
		if i < 0 {
			return len(b)
		}
		q := p + i
		n := 0
		for k := q - 1; k >= p && b[k] == '\\'; k-- {
			n++
		}
		if n%2 == 0 {
			return q + 1
		}
		p = q + 1
	}
}

// skipValue returns the index after the JSON value starting at p.
func skipValue(b []byte, p int) int {
	switch b[p] {
	case '"':
		return skipString(b, p)
	case '{', '[':
		depth := 0
		for ; p < len(b); p++ {
			switch b[p] {
			case '"':
				p = skipString(b, p) - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return p + 1
				}
			}
		}
		return p
	}
	for ; p < len(b); p++ {
		switch b[p] {
		case ' ', '\t', '\r', '\n', ',', '}', ']':
			return p
		}
	}
	return p
}

// unquote decodes a JSON string's bytes; without escapes it is a sub-slice
// of the input and allocates nothing.
func unquote(s []byte) []byte {
	inner := s[1 : len(s)-1]
	if bytes.IndexByte(inner, '\\') < 0 {
		return inner
	}
	var out string
	if json.Unmarshal(s, &out) != nil {
		return inner
	}
	return []byte(out)
}

// compact appends v without insignificant whitespace. v is valid JSON, so
// whitespace outside strings is all there is to drop; numbers and strings
// are copied byte for byte.
func compact(dst *strings.Builder, v []byte) {
	if !hasSpace(v) {
		dst.Write(v)
		return
	}
	start := 0
	for p := 0; p < len(v); p++ {
		switch v[p] {
		case '"':
			p = skipString(v, p) - 1
		case ' ', '\t', '\n', '\r':
			dst.Write(v[start:p])
			start = p + 1
		}
	}
	dst.Write(v[start:])
}

// hasSpace reports whether v holds a JSON whitespace byte (bytes.IndexAny
// builds its set on every call, which showed in the profile).
func hasSpace(v []byte) bool {
	for _, c := range v {
		if c <= ' ' && (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
			return true
		}
	}
	return false
}
