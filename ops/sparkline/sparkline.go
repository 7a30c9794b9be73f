// Package sparkline draws counts as a line of bars for a terminal: the
// counts chart of make run's printout and of shardline counts.
package sparkline

import "strings"

// bars are the eight heights of a sparkline, lowest first.
var bars = []rune("▁▂▃▄▅▆▇█")

// Draw draws counts as one line of bars scaled to the largest; a zero
// is a space, so that an empty bucket never looks like a small one.
func Draw(counts []int) string {
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

// Fit sums runs of per consecutive counts so that at most width remain,
// and returns the sums and per (1 when counts already fit). width below 1
// counts as 1.
func Fit(counts []int, width int) (sums []int, per int) {
	width = max(width, 1)
	per = max((len(counts)+width-1)/width, 1)
	if per == 1 {
		return counts, 1
	}
	for i := 0; i < len(counts); i += per {
		s := 0
		for _, n := range counts[i:min(i+per, len(counts))] {
			s += n
		}
		sums = append(sums, s)
	}
	return sums, per
}
