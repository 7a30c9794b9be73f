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
