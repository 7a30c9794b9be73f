// Package echo bounds what an error answer quotes back of a client's input
// (a time, a header, an id, a query parameter), so that no input can make
// an answer outgrow Lambda's 6 MB response payload: a long value is cut
// and says that it was, and how long it was in full.
package echo

import (
	"fmt"
	"strconv"
	"unicode/utf8"
)

// MaxQuoted is the most bytes of a value an error message quotes.
const MaxQuoted = 64

// Quote is s as %q writes it; past MaxQuoted bytes, its first MaxQuoted
// (at a character boundary) quoted and marked, such as
// "<<<<"… (the first 64 of 60000 bytes).
func Quote(s string) string {
	if len(s) <= MaxQuoted {
		return strconv.Quote(s)
	}
	head := Prefix(s, MaxQuoted)
	return fmt.Sprintf("%s… (the first %d of %d bytes)", strconv.Quote(head), len(head), len(s))
}

// Cut is s when it is at most n bytes; else its first n bytes or fewer (at
// a character boundary) followed by "… (the first k of N bytes)".
func Cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	head := Prefix(s, n)
	return fmt.Sprintf("%s… (the first %d of %d bytes)", head, len(head), len(s))
}

// Prefix is the longest start of s of at most n bytes that does not end
// inside a UTF-8 sequence (bytes that are not UTF-8 count one each).
func Prefix(s string, n int) string {
	if len(s) <= n {
		return s
	}
	end := n
	for end > 0 && end > n-utf8.UTFMax && !utf8.RuneStart(s[end]) {
		end--
	}
	if end == 0 || end == n-utf8.UTFMax { // no character starts near the cut: not UTF-8 there
		end = n
	}
	return s[:end]
}
