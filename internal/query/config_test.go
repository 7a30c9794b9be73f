package query_test

import (
	"testing"

	"github.com/shardline/shardline/internal/ingest"
	"github.com/shardline/shardline/internal/query"
)

// TestLogLevelMeansTheSameInBothFunctions: one LOG_LEVEL value is accepted
// by both functions or by neither, and means the same level in both.
func TestLogLevelMeansTheSameInBothFunctions(t *testing.T) {
	for _, v := range []string{"", "info", "DEBUG", " warn ", "error", "info+2", "DEBUG-4", "warning", "loud"} {
		env := func(k string) string {
			switch k {
			case ingest.EnvTable:
				return "t"
			case ingest.EnvLogLevel:
				return v
			}
			return ""
		}
		ic, ierr := ingest.ConfigFromEnv(env)
		qc, qerr := query.ConfigFromEnv(env)
		if (ierr == nil) != (qerr == nil) {
			t.Errorf("LOG_LEVEL=%q: ingest says %v, query says %v", v, ierr, qerr)
			continue
		}
		if ierr == nil && ic.LogLevel != qc.LogLevel {
			t.Errorf("LOG_LEVEL=%q: ingest logs at %v, query at %v", v, ic.LogLevel, qc.LogLevel)
		}
	}
}
