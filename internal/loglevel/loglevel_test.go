package loglevel

import (
	"log/slog"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	for in, want := range map[string]slog.Level{
		"": slog.LevelInfo, "info": slog.LevelInfo, " DEBUG ": slog.LevelDebug, "Warn": slog.LevelWarn, "error": slog.LevelError,
	} {
		got, err := Parse(in)
		if err != nil || got != want {
			t.Errorf("Parse(%q) = %v, %v; want %v", in, got, err, want)
		}
		if in != "" {
			if back, _ := Parse(Name(got)); back != got {
				t.Errorf("Name(%v) = %q does not parse back", got, Name(got))
			}
		}
	}
	// slog.Level.UnmarshalText accepts these; the functions must not, or
	// the query function would take what the ingest function refuses.
	for _, in := range []string{"info+2", "DEBUG-4", "warning", "loud", "0"} {
		if _, err := Parse(in); err == nil || !strings.Contains(err.Error(), Accepted) {
			t.Errorf("Parse(%q) = %v, want an error listing %s", in, err, Accepted)
		}
	}
}
