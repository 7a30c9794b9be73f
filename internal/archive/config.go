// Package archive keeps every stored event in S3 past the table's
// retention, for Athena: a function on the table's stream writes each
// batch's inserted or rewritten events as gzip JSON lines, one object per
// (bucket of sources, UTC day) of the batch, under Hive-style partitions
// that the stack's Glue table projects. docs/archive.md gives the design.
package archive

import (
	"fmt"
	"log/slog"
	"strings"

	"github.com/shardline/shardline/internal/loglevel"
)

// Environment variables the archive function reads, besides the AWS SDK's.
const (
	EnvBucket   = "ARCHIVE_BUCKET" // required: the archive bucket's name
	EnvLogLevel = "LOG_LEVEL"      // debug, info, warn or error; default info
)

// EnvVars lists every variable above.
var EnvVars = []string{EnvBucket, EnvLogLevel}

// Config is the archive function's configuration.
type Config struct {
	Bucket   string
	LogLevel slog.Level
}

// ConfigFromEnv reads the configuration through getenv. Every error names
// the variable.
func ConfigFromEnv(getenv func(string) string) (Config, error) {
	c := Config{Bucket: strings.TrimSpace(getenv(EnvBucket))}
	if c.Bucket == "" {
		return c, fmt.Errorf("%s is required: set it to the name of the archive bucket", EnvBucket)
	}
	var err error
	if c.LogLevel, err = loglevel.Parse(getenv(EnvLogLevel)); err != nil {
		return c, fmt.Errorf("%s=%w", EnvLogLevel, err)
	}
	return c, nil
}
