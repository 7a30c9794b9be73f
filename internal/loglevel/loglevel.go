// Package loglevel parses LOG_LEVEL, the one setting both functions and the
// stack's LogLevel prop share, so that the three accept exactly the same
// words.
package loglevel

import (
	"fmt"
	"log/slog"
	"strings"
)

// Accepted names the levels Parse accepts, for error messages.
const Accepted = "debug, info, warn or error"

// Parse returns the level s names: debug, info, warn or error, in any case,
// surrounding space ignored; empty is info. slog's own offsets ("info+2")
// and aliases are refused, so that a value that works in one function works
// in the other and in the stack.
func Parse(s string) (slog.Level, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "info":
		return slog.LevelInfo, nil
	case "debug":
		return slog.LevelDebug, nil
	case "warn":
		return slog.LevelWarn, nil
	case "error":
		return slog.LevelError, nil
	}
	return slog.LevelInfo, fmt.Errorf("%q: want %s", s, Accepted)
}

// Name is the lower-case name of l as Parse accepts it.
func Name(l slog.Level) string { return strings.ToLower(l.String()) }
