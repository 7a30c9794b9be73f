package ingest

import (
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/shardline/shardline/internal/adapt"
	"github.com/shardline/shardline/internal/cloudevent"
	"github.com/shardline/shardline/internal/loglevel"
	"github.com/shardline/shardline/internal/shardmap"
	"github.com/shardline/shardline/internal/tenant"
	"github.com/shardline/shardline/internal/writer"
	"github.com/shardline/shardline/pkg/bucketing"
)

// Environment variables the ingest function reads, besides the AWS SDK's own
// (AWS_REGION, AWS_ENDPOINT_URL_DYNAMODB, credentials).
const (
	EnvTable            = "EVENTS_TABLE"         // required: the table's name
	EnvShards           = "SHARDS_DEFAULT"       // base-table shards per source; default 4
	EnvShardOverrides   = "SHARDS_OVERRIDES"     // JSON object {"source": shards}; default none
	EnvGSIShards        = "GSI_SHARDS_DEFAULT"   // GSI shards per source; default 1
	EnvGSIOverrides     = "GSI_SHARDS_OVERRIDES" // JSON object {"source": GSI shards}; default none
	EnvShardsMax        = "SHARDS_MAX"           // most shards adaptive sharding raises a source to; default 128; 0 turns it off
	EnvQuarantineShards = "QUARANTINE_SHARDS"    // shards of the quarantine key space; default 4
	EnvRetentionDays    = "RETENTION_DAYS"       // days an event is kept (TTL); default 30
	EnvMaxEventBytes    = "MAX_EVENT_BYTES"      // largest event accepted; default 65536, at most 350000
	EnvWriteConcurrency = "WRITE_CONCURRENCY"    // BatchWriteItem requests in flight; default 32
	EnvLogLevel         = "LOG_LEVEL"            // debug, info, warn or error; default info
	EnvGSICopies        = "GSI_COPIES"           // which days' events get a GSI copy: always or where-it-pays; default always
)

// EnvVars lists every variable above, for documentation and for the check
// that the stack sets exactly what the function reads.
// The tenant variables (tenant.EnvTenants, EnvStreams, EnvRoles) are set
// only when the deployment has tenants.
var EnvVars = []string{EnvTable, EnvShards, EnvShardOverrides, EnvGSIShards, EnvGSIOverrides, EnvShardsMax,
	EnvQuarantineShards, EnvRetentionDays, EnvMaxEventBytes, EnvWriteConcurrency, EnvLogLevel, EnvGSICopies,
	tenant.EnvTenants, tenant.EnvStreams, tenant.EnvRoles}

// Defaults.
const (
	DefaultShards           = 4
	DefaultGSIShards        = 1
	DefaultQuarantineShards = 4
	DefaultRetentionDays    = 30
	DefaultShardsMax        = adapt.DefaultMax
)

// Config is the ingest function's configuration.
type Config struct {
	Table     string
	Shards    bucketing.Counts
	GSIShards bucketing.Counts
	// ShardsMax bounds adaptive sharding: a source that nears its keys'
	// ceiling has its base-table and GSI shard counts raised, up to this
	// many (the configured counts stay the floor). 0 turns it off.
	ShardsMax        int
	QuarantineShards int
	Retention        time.Duration
	MaxEventBytes    int
	WriteConcurrency int
	LogLevel         slog.Level
	// GSICopies says on which days events get a GSI copy
	// (shardmap.CopiesAlways, the default, or CopiesWhereItPays); each
	// day's record keeps what was decided when it was created.
	GSICopies shardmap.Copies
	// Tenants are the teams that own sources (tenant.FromEnv: TENANTS,
	// TENANT_STREAMS, TENANT_ROLES); nil or empty without tenants. A
	// tenant's route and own stream take only its sources.
	Tenants *tenant.Config
}

// DefaultConfig is the configuration with every default, for table.
func DefaultConfig(table string) Config {
	return Config{
		Table:            table,
		Shards:           bucketing.Counts{Default: DefaultShards},
		GSIShards:        bucketing.Counts{Default: DefaultGSIShards},
		ShardsMax:        DefaultShardsMax,
		QuarantineShards: DefaultQuarantineShards,
		Retention:        DefaultRetentionDays * 24 * time.Hour,
		MaxEventBytes:    cloudevent.DefaultMaxBytes,
		WriteConcurrency: writer.DefaultConcurrency,
		LogLevel:         slog.LevelInfo,
		GSICopies:        shardmap.CopiesAlways,
	}
}

// ConfigFromEnv reads the configuration through getenv (os.Getenv in the
// function). Every error names the variable and what it accepts.
func ConfigFromEnv(getenv func(string) string) (Config, error) {
	c := DefaultConfig(strings.TrimSpace(getenv(EnvTable)))
	if c.Table == "" {
		return c, fmt.Errorf("%s is required: set it to the name of the events table", EnvTable)
	}
	var err error
	intVar := func(name string, dst *int, lo, hi int) {
		s := strings.TrimSpace(getenv(name))
		if s == "" || err != nil {
			return
		}
		n, e := strconv.Atoi(s)
		if e != nil || n < lo || n > hi {
			err = fmt.Errorf("%s=%q: want a whole number from %d to %d", name, s, lo, hi)
			return
		}
		*dst = n
	}
	intVar(EnvShards, &c.Shards.Default, 1, bucketing.MaxShards)
	intVar(EnvGSIShards, &c.GSIShards.Default, 1, bucketing.MaxShards)
	intVar(EnvShardsMax, &c.ShardsMax, 0, bucketing.MaxShards)
	intVar(EnvQuarantineShards, &c.QuarantineShards, 1, bucketing.MaxShards)
	days := DefaultRetentionDays
	intVar(EnvRetentionDays, &days, 1, 3650)
	c.Retention = time.Duration(days) * 24 * time.Hour
	intVar(EnvMaxEventBytes, &c.MaxEventBytes, 1024, cloudevent.MaxBytesLimit)
	intVar(EnvWriteConcurrency, &c.WriteConcurrency, 1, 256)
	if err != nil {
		return c, err
	}
	if c.Shards.Overrides, err = bucketing.ParseOverrides(getenv(EnvShardOverrides)); err != nil {
		return c, fmt.Errorf("%s: %w", EnvShardOverrides, err)
	}
	if c.GSIShards.Overrides, err = bucketing.ParseOverrides(getenv(EnvGSIOverrides)); err != nil {
		return c, fmt.Errorf("%s: %w", EnvGSIOverrides, err)
	}
	if c.LogLevel, err = loglevel.Parse(getenv(EnvLogLevel)); err != nil {
		return c, fmt.Errorf("%s=%w", EnvLogLevel, err)
	}
	if c.GSICopies, err = shardmap.ParseCopies(strings.TrimSpace(getenv(EnvGSICopies))); err != nil {
		return c, fmt.Errorf("%s=%w", EnvGSICopies, err)
	}
	if c.Tenants, err = tenant.FromEnv(getenv); err != nil {
		return c, err
	}
	return c, nil
}
