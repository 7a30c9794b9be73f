package devserver

import "strings"

// bars are the eight heights of a sparkline, lowest first.
var bars = []rune("▁▂▃▄▅▆▇█")

// sparkline draws counts as one line of bars scaled to the largest; a zero
// is a space, so that an empty bucket never looks like a small one.
func sparkline(counts []int) string {
	top := 0
	for _, n := range counts {
		top = max(top, n)
	}
	var b strings.Builder
	for _, n := range counts {
		switch {
		case n <= 0:
			b.WriteByte(' ')
		default:
			b.WriteRune(bars[(n*len(bars)-1)/top])
		}
	}
	return b.String()
}
