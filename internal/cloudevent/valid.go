package cloudevent

import "encoding/binary"

// maxDepth is the deepest nesting validJSON accepts: encoding/json's own
// bound, so that both accept and refuse the same inputs.
const maxDepth = 10000

// validJSON reports whether b is one JSON value, with optional whitespace
// around it, exactly as json.Valid does (a differential fuzz test holds it
// to that). It is on the hot path of ingestion, where json.Valid's
// byte-at-a-time state machine was a third of the handler's time: this
// scanner walks strings eight bytes at a time and needs no per-byte
// function call. Like json.Valid, it does not check UTF-8 inside strings;
// callers check utf8.Valid first.
func validJSON(b []byte) bool {
	var stackBuf [64]byte
	stack := stackBuf[:0] // '{' or '[' per open container
	p := skipSpace(b, 0)
	for {
		// A value is expected at p.
		if p >= len(b) {
			return false
		}
		switch c := b[p]; c {
		case '{', '[':
			if len(stack) >= maxDepth {
				return false
			}
			if p = skipSpace(b, p+1); p < len(b) && b[p] == c+2 { // '}' or ']': empty
				p++
				break
			}
			if stack = append(stack, c); c == '{' {
				if p = objectKey(b, p); p < 0 {
					return false
				}
			}
			continue
		case '"':
			p = validString(b, p)
		case 't', 'f', 'n':
			p = validLiteral(b, p)
		default:
			p = validNumber(b, p)
		}
		// A value ended at p: close containers, or move to the next value.
		for p >= 0 {
			if p = skipSpace(b, p); len(stack) == 0 {
				return p == len(b)
			}
			if p >= len(b) {
				return false
			}
			top := stack[len(stack)-1]
			if b[p] != ',' {
				if b[p] != top+2 { // '}' or ']'
					return false
				}
				stack = stack[:len(stack)-1]
				p++
				continue
			}
			if p = skipSpace(b, p+1); top == '{' {
				p = objectKey(b, p)
			}
			break
		}
		if p < 0 {
			return false
		}
	}
}

// validLiteral checks the true, false or null at p and returns where it
// ends, or -1.
func validLiteral(b []byte, p int) int {
	lit := "null"
	switch b[p] {
	case 't':
		lit = "true"
	case 'f':
		lit = "false"
	}
	if !hasLiteral(b, p, lit) {
		return -1
	}
	return p + len(lit)
}

// objectKey checks a member name and its colon at p, and returns where
// the member's value begins, or -1.
func objectKey(b []byte, p int) int {
	if p >= len(b) || b[p] != '"' {
		return -1
	}
	if p = validString(b, p); p < 0 {
		return -1
	}
	p = skipSpace(b, p)
	if p >= len(b) || b[p] != ':' {
		return -1
	}
	return skipSpace(b, p+1)
}

func hasLiteral(b []byte, p int, lit string) bool {
	return len(b)-p >= len(lit) && string(b[p:p+len(lit)]) == lit
}

// SWAR constants: lo has 0x01 in every byte, hi 0x80.
const (
	lo = 0x0101010101010101
	hi = 0x8080808080808080
)

// plainWord reports whether none of the eight bytes of w is a quote, a
// backslash or a control character (< 0x20). It is the classic
// has-zero-byte test, exact for each of the three conditions.
func plainWord(w uint64) bool {
	quote := w ^ (lo * '"')
	slash := w ^ (lo * '\\')
	// A byte < 0x20 is found by subtracting 0x20 from bytes whose top bit
	// is clear; bytes >= 0x80 are masked out by &^ w.
	ctl := (w - lo*0x20) &^ w
	q := (quote - lo) &^ quote
	s := (slash - lo) &^ slash
	return (ctl|q|s)&hi == 0
}

// validString checks the JSON string that starts with the quote at p and
// returns the index after its closing quote, or -1.
func validString(b []byte, p int) int {
	p++
	for {
		for len(b)-p >= 8 && plainWord(binary.LittleEndian.Uint64(b[p:])) {
			p += 8
		}
		for p < len(b) && b[p] >= 0x20 && b[p] != '"' && b[p] != '\\' {
			p++
		}
		if p >= len(b) {
			return -1
		}
		switch b[p] {
		case '"':
			return p + 1
		case '\\':
			if p+1 >= len(b) {
				return -1
			}
			switch b[p+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				p += 2
			case 'u':
				if len(b)-p < 6 || !isHex(b[p+2]) || !isHex(b[p+3]) || !isHex(b[p+4]) || !isHex(b[p+5]) {
					return -1
				}
				p += 6
			default:
				return -1
			}
		default: // a control character
			return -1
		}
	}
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// validNumber checks the JSON number at p and returns the index after it,
// or -1: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func validNumber(b []byte, p int) int {
	if p < len(b) && b[p] == '-' {
		p++
	}
	switch {
	case p >= len(b):
		return -1
	case b[p] == '0':
		p++
	case '1' <= b[p] && b[p] <= '9':
		p = digits(b, p+1)
	default:
		return -1
	}
	if p < len(b) && b[p] == '.' {
		q := digits(b, p+1)
		if q == p+1 {
			return -1
		}
		p = q
	}
	if p < len(b) && (b[p] == 'e' || b[p] == 'E') {
		p++
		if p < len(b) && (b[p] == '+' || b[p] == '-') {
			p++
		}
		q := digits(b, p)
		if q == p {
			return -1
		}
		p = q
	}
	return p
}

func digits(b []byte, p int) int {
	for p < len(b) && '0' <= b[p] && b[p] <= '9' {
		p++
	}
	return p
}
