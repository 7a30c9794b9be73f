// Package payload sizes an API request's body as Lambda receives it: a JSON
// string (or base64) inside API Gateway's event, which must fit Lambda's
// invocation payload limit. The producer batches by it and the ingest
// function refuses by it, so that a request the one sends the other takes.
package payload

import "unicode/utf8"

// Limits of a request's body in Lambda's invocation payload.
const (
	// LambdaBytes is Lambda's limit on a synchronous invocation's request
	// payload: the whole API Gateway event as JSON.
	LambdaBytes = 6 << 20 // 6,291,456

	// EnvelopeBytes is what is kept for the rest of the event: its headers
	// (API Gateway takes at most 10,240 bytes of them, which a REST (v1)
	// event carries twice, in headers and multiValueHeaders) and the
	// request context (route, times, the IAM caller: under 2 KB).
	EnvelopeBytes = 32 << 10 // 32,768

	// MaxBodyBytes is the most a body may take in the event: as a JSON
	// string with its escapes and quotes, or as base64 in quotes.
	MaxBodyBytes = LambdaBytes - EnvelopeBytes // 6,258,688
)

// Size is a body's size in the event, built up from its parts in order.
// The zero value is an empty body. Parts must end on whole UTF-8
// characters (a JSON value does).
type Size struct {
	raw     int  // the body's bytes
	escaped int  // its bytes as a JSON string, quotes not counted
	binary  bool // not UTF-8: API Gateway sends it base64-encoded
}

// Add returns s with part appended to the body.
func (s Size) Add(part []byte) Size { return add(s, part) }

// AddString is Add of a string.
func (s Size) AddString(part string) Size { return add(s, part) }

func add[T ~string | ~[]byte](s Size, part T) Size {
	s.raw += len(part)
	n, ok := escapedLen(part)
	s.escaped += n
	s.binary = s.binary || !ok
	return s
}

// Bytes is what the body takes in the event: its JSON string, quotes
// included, or, when it is not UTF-8, its base64 in quotes.
func (s Size) Bytes() int {
	if s.binary {
		return Base64(s.raw)
	}
	return s.escaped + 2
}

// Body is Bytes of a whole body.
func Body[T ~string | ~[]byte](body T) int { return add(Size{}, body).Bytes() }

// Base64 is what n bytes take in the event base64-encoded, quotes included.
func Base64(n int) int { return (n+2)/3*4 + 2 }

// escapedLen is the bytes of b as the inside of a JSON string, escaped as
// encoding/json escapes it (the most of the encoders: <, > and & as
// \u003c, U+2028 and U+2029 as \u2028), and whether b is UTF-8.
func escapedLen[T ~string | ~[]byte](b T) (int, bool) {
	n, valid := 0, true
	for i := 0; i < len(b); {
		if c := b[i]; c < utf8.RuneSelf {
			n += asciiLen(c)
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(string(b[i:min(i+utf8.UTFMax, len(b))]))
		switch {
		case r == utf8.RuneError && size == 1:
			n += len(`\ufffd`)
			valid = false
		case r == '\u2028' || r == '\u2029':
			n += len(`\u2028`)
		default:
			n += size
		}
		i += size
	}
	return n, valid
}

// asciiLen is the bytes of the ASCII character c in a JSON string.
func asciiLen(c byte) int {
	switch {
	case c == '<' || c == '>' || c == '&':
		return len(`\u003c`)
	case c == '"' || c == '\\' || c == '\b' || c == '\f' || c == '\n' || c == '\r' || c == '\t':
		return 2
	case c < 0x20:
		return len(`\u0001`)
	}
	return 1
}
