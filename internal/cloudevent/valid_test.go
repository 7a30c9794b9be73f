package cloudevent

import (
	"encoding/json"
	"strings"
	"testing"
)

// validCases are inputs on every edge of the JSON grammar, each checked
// against json.Valid.
var validCases = []string{
	``, ` `, `{}`, `[]`, ` { } `, `[ ]`, `{"a":1}`, `{"a":1,}`, `[1,]`, `[,1]`, `{,}`, `{"a"}`, `{"a":}`,
	`{"a" : 1 , "b" : [ true , false , null ] }`, `{"a":1}}`, `[[1]`, `[1]]`, `{"a":1]`, `[1}`, `{1:2}`,
	`"x"`, `"`, `"\`, `"\"`, `"\\"`, `"\/\b\f\n\r\t"`, `"\u00e9"`, `"\u00g9"`, `"\u00"`, `"\x"`, "\"a\tb\"", "\"a\x1fb\"",
	"\"a\x7fb\"", "\"\xff\xfe\"", `"0123456789abcdef\"0123456789"`, `"01234567\\"`, `"0123456\\\""`,
	`0`, `-0`, `01`, `-`, `1.`, `1.5`, `.5`, `1e`, `1e+`, `1e+5`, `1E-05`, `-1.5e10`, `12345678901234567890`, `1 2`, `+1`,
	`true`, `tru`, `truex`, `false`, `fals`, `null`, `nul`, `nulll`, `[true,false,null]`, `[truefalse]`,
	"\t\r\n{}\n", "{}\v", "\u00a0{}", `{"a":{"b":{"c":[1,2,{"d":"e"}]}}}`, `{"a":1 "b":2}`, `[1 2]`, `{"a"::1}`,
}

func TestValidJSONAgreesWithEncodingJSON(t *testing.T) {
	cases := append([]string(nil), validCases...)
	for _, d := range []int{maxDepth - 1, maxDepth, maxDepth + 1} {
		cases = append(cases, strings.Repeat("[", d)+strings.Repeat("]", d),
			strings.Repeat(`{"a":`, d)+"1"+strings.Repeat("}", d),
			strings.Repeat("[", d-1)+"{}"+strings.Repeat("]", d-1))
	}
	for _, c := range cases {
		if got, want := validJSON([]byte(c)), json.Valid([]byte(c)); got != want {
			t.Errorf("validJSON(%.60q) = %v; json.Valid says %v", c, got, want)
		}
	}
}

// FuzzValidJSON holds validJSON to json.Valid on any input.
func FuzzValidJSON(f *testing.F) {
	for _, c := range validCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := validJSON(b), json.Valid(b); got != want {
			t.Fatalf("validJSON(%q) = %v; json.Valid says %v", b, got, want)
		}
	})
}
