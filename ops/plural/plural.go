// Package plural picks a noun's form for a count ("1 record", "2
// records"), for the messages the operator's commands, the previous
// release's counter's redrive (ops/sourcecounter) and the benchmark print.
package plural

import "strconv"

// Of is one when n is 1, many otherwise.
func Of(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// Count is n and the form of the noun that goes with it: "1 event",
// "2 events".
func Count(n int, one, many string) string {
	return strconv.Itoa(n) + " " + Of(n, one, many)
}
