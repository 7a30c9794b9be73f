package echo

import (
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestQuoteShortValuesWhole(t *testing.T) {
	for _, s := range []string{"", "lunchtime", strings.Repeat("<", MaxQuoted), "\x00\"\u0080\u2028"} {
		if got, want := Quote(s), strconv.Quote(s); got != want {
			t.Errorf("Quote(%q) = %s, want %s", s, got, want)
		}
	}
}

func TestQuoteLongValuesCutAndSaySo(t *testing.T) {
	s := strings.Repeat("<", 60000)
	want := strconv.Quote(strings.Repeat("<", MaxQuoted)) + "… (the first 64 of 60000 bytes)"
	if got := Quote(s); got != want {
		t.Fatalf("Quote = %s, want %s", got, want)
	}
}

func TestCut(t *testing.T) {
	if got := Cut("abc", 3); got != "abc" {
		t.Errorf("Cut(abc, 3) = %q", got)
	}
	if got := Cut("abcdef", 3); got != "abc… (the first 3 of 6 bytes)" {
		t.Errorf("Cut(abcdef, 3) = %q", got)
	}
}

// TestPrefixKeepsCharactersWhole: a cut never splits a UTF-8 sequence, and
// bytes that are not UTF-8 are cut where they fall.
func TestPrefixKeepsCharactersWhole(t *testing.T) {
	cases := []struct {
		s    string
		n    int
		want string
	}{
		{"aé", 2, "a"},  // é is 2 bytes: not split
		{"a😀b", 4, "a"}, // 😀 is 4 bytes
		{"a😀b", 5, "a😀"},
		{"\x80\x80\x80\x80\x80\x80", 5, "\x80\x80\x80\x80\x80"},
		{"é", 1, "\xc3"}, // no whole character fits: the bytes, as they fall
	}
	for _, c := range cases {
		if got := Prefix(c.s, c.n); got != c.want {
			t.Errorf("Prefix(%q, %d) = %q, want %q", c.s, c.n, got, c.want)
		}
	}
	long := strings.Repeat("ü", 100)
	if p := Prefix(long, MaxQuoted+1); !utf8.ValidString(p) || len(p) != MaxQuoted {
		t.Errorf("Prefix of ü×100 at %d: %d bytes, valid %v", MaxQuoted+1, len(p), utf8.ValidString(p))
	}
}
