package counts

import (
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/shardline/shardline/internal/loglevel"
)

// Environment variables the counter function reads, besides the AWS SDK's.
const (
	EnvTable         = "EVENTS_TABLE"   // required: the table's name
	EnvRetentionDays = "RETENTION_DAYS" // days events are kept, as the ingest function's; default 30
	EnvLogLevel      = "LOG_LEVEL"      // debug, info, warn or error; default info

	// EnvBuckets is the number of L1 buckets of the sources, read by the
	// scheduled fold and by the query function: both must have the same
	// (the stack sets it in both). Default DefaultBuckets.
	EnvBuckets = "COUNT_BUCKETS"
)

// EnvVars lists every variable above.
var EnvVars = []string{EnvTable, EnvRetentionDays, EnvLogLevel}

// DefaultRetentionDays is the ingest function's default retention.
const DefaultRetentionDays = 30

// Config is the counter function's configuration.
type Config struct {
	Table     string
	Retention time.Duration
	LogLevel  slog.Level
}

// ConfigFromEnv reads the configuration through getenv. Every error names
// the variable and what it accepts.
func ConfigFromEnv(getenv func(string) string) (Config, error) {
	c := Config{Table: strings.TrimSpace(getenv(EnvTable)), Retention: DefaultRetentionDays * 24 * time.Hour}
	if c.Table == "" {
		return c, fmt.Errorf("%s is required: set it to the name of the events table", EnvTable)
	}
	if s := strings.TrimSpace(getenv(EnvRetentionDays)); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 3650 {
			return c, fmt.Errorf("%s=%q: want a whole number from 1 to 3650", EnvRetentionDays, s)
		}
		c.Retention = time.Duration(n) * 24 * time.Hour
	}
	var err error
	if c.LogLevel, err = loglevel.Parse(getenv(EnvLogLevel)); err != nil {
		return c, fmt.Errorf("%s=%w", EnvLogLevel, err)
	}
	return c, nil
}

// MaxL1Buckets bounds EnvBuckets: a fold writes up to one pack per bucket a
// run, 20 s apart (docs/counts.md, "Heat at the claimed scale").
const MaxL1Buckets = 4096

// ParseBuckets reads EnvBuckets' value s: DefaultBuckets when empty.
func ParseBuckets(s string) (int, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return DefaultBuckets, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > MaxL1Buckets {
		return 0, fmt.Errorf("%s=%q: want a whole number from 1 to %d", EnvBuckets, s, MaxL1Buckets)
	}
	return n, nil
}
