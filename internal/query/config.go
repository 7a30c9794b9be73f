package query

import (
	"fmt"
	"log/slog"
	"strconv"
	"strings"

	"github.com/shardline/shardline/internal/loglevel"
)

// Environment variables the query function reads, besides the AWS SDK's own.
const (
	EnvTable        = "EVENTS_TABLE"      // required: the table's name
	EnvCursorSecret = "CURSOR_SECRET"     // key that signs cursors; default derived from the table name
	EnvConcurrency  = "QUERY_CONCURRENCY" // DynamoDB requests in flight per page; default 32
	EnvLogLevel     = "LOG_LEVEL"         // debug, info, warn or error; default info
)

// EnvVars lists every variable above.
var EnvVars = []string{EnvTable, EnvCursorSecret, EnvConcurrency, EnvLogLevel}

// Config is the query function's configuration.
type Config struct {
	Table        string
	CursorSecret string
	Concurrency  int
	LogLevel     slog.Level
}

// ConfigFromEnv reads the configuration through getenv.
func ConfigFromEnv(getenv func(string) string) (Config, error) {
	c := Config{Table: strings.TrimSpace(getenv(EnvTable)), CursorSecret: getenv(EnvCursorSecret), Concurrency: DefaultConcurrency}
	if c.Table == "" {
		return c, fmt.Errorf("%s is required: set it to the name of the events table", EnvTable)
	}
	if s := strings.TrimSpace(getenv(EnvConcurrency)); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 256 {
			return c, fmt.Errorf("%s=%q: want a whole number from 1 to 256", EnvConcurrency, s)
		}
		c.Concurrency = n
	}
	var err error
	if c.LogLevel, err = loglevel.Parse(getenv(EnvLogLevel)); err != nil {
		return c, fmt.Errorf("%s=%w", EnvLogLevel, err)
	}
	return c, nil
}
