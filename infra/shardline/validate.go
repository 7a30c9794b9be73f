package shardline

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/shardline/shardline/internal/cloudevent"
	"github.com/shardline/shardline/internal/ingest"
	"github.com/shardline/shardline/internal/loglevel"
	"github.com/shardline/shardline/internal/schema"
	"github.com/shardline/shardline/pkg/bucketing"
)

// Validate fills the defaults and checks every prop, so that a bad value is
// an error that names the prop, before NewPipeline (which panics on one, as
// CDK constructs do) or CloudFormation sees it.
func (p Props) Validate() error { return p.withDefaults().validate() }

// validate checks props that have their defaults.
func (p Props) validate() error {
	err := errors.Join(p.checkInts(), p.checkDurations(), p.checkRecovery(), p.checkArchive(), p.checkWords())
	if err != nil {
		return fmt.Errorf("shardline props: %w", err)
	}
	// The ingest function's own rules, as a last check that the two agree.
	env := p.ingestEnv("table")
	if _, err := ingest.ConfigFromEnv(func(k string) string { return env[k] }); err != nil {
		return fmt.Errorf("shardline props: the ingest function's environment: %w", err)
	}
	return nil
}

type intRule struct {
	name   string
	v      int
	lo, hi int
}

func (p Props) checkInts() error {
	const unbounded = math.MaxInt
	var errs []error
	for _, r := range []intRule{
		{"Shards", p.Shards, 1, bucketing.MaxShards},
		{"GSIShards", p.GSIShards, 1, bucketing.MaxShards},
		{"QuarantineShards", p.QuarantineShards, 1, bucketing.MaxShards},
		{"ShardsMax", *p.ShardsMax, 0, bucketing.MaxShards},
		{"RetentionDays", p.RetentionDays, 1, 3650},
		{"MaxEventBytes", p.MaxEventBytes, 1024, cloudevent.MaxBytesLimit},
		{"WriteConcurrency", p.WriteConcurrency, 1, 256},
		{"QueryConcurrency", p.QueryConcurrency, 1, 256},
		{"IngestMemoryMB", p.IngestMemoryMB, 128, 10240},
		{"QueryMemoryMB", p.QueryMemoryMB, 128, 10240},
		{"LogRetentionDays", p.LogRetentionDays, 1, 3653},
		{"BatchSize", p.BatchSize, 1, 10000},
		{"ParallelizationFactor", p.ParallelizationFactor, 1, 10},
		{"RetryAttempts", *p.RetryAttempts, 0, 10000},
		{"IngestRateLimit", p.IngestRateLimit, 1, unbounded},
		{"IngestBurstLimit", p.IngestBurstLimit, 1, unbounded},
		{"QueryRateLimit", p.QueryRateLimit, 1, unbounded},
		{"QueryBurstLimit", p.QueryBurstLimit, 1, unbounded},
		{"IteratorAgeSeconds", *p.IteratorAgeSeconds, 0, 365 * 24 * 3600},
		{"FunctionErrors", *p.FunctionErrors, 0, unbounded},
		{"Throttles", *p.Throttles, 0, unbounded},
		{"API5xx", *p.API5xx, 0, unbounded},
	} {
		switch {
		case r.v >= r.lo && r.v <= r.hi:
		case r.hi == unbounded:
			errs = append(errs, fmt.Errorf("%s is %d: want at least %d", r.name, r.v, r.lo))
		default:
			errs = append(errs, fmt.Errorf("%s is %d: want a whole number from %d to %d", r.name, r.v, r.lo, r.hi))
		}
	}
	return errors.Join(errs...)
}

// checkDurations: Lambda and the event source mapping count these in whole
// seconds, and CDK refuses (with a panic at synth) a duration it cannot
// convert.
func (p Props) checkDurations() error {
	var errs []error
	for _, r := range []struct {
		name   string
		v      time.Duration
		lo, hi time.Duration
	}{
		{"BatchingWindow", *p.BatchingWindow, 0, 300 * time.Second},
		{"IngestTimeout", p.IngestTimeout, 10 * time.Second, 15 * time.Minute},
		{"MaxRecordAge", p.MaxRecordAge, time.Minute, 7 * 24 * time.Hour},
	} {
		if r.v < r.lo || r.v > r.hi || r.v%time.Second != 0 {
			errs = append(errs, fmt.Errorf("%s is %v: want whole seconds from %v to %v", r.name, r.v, r.lo, r.hi))
		}
	}
	return errors.Join(errs...)
}

// MaxStreamRetention is the longest retention Kinesis allows, 365 days.
const MaxStreamRetention = 8760 * time.Hour

// checkRecovery holds the rule that a batch Lambda gives up on stays
// recoverable for RecoverableFor: the stream must keep its records that
// long after MaxRecordAge, the latest a give-up happens. An existing
// stream's retention cannot be read at synth, so it must be declared.
func (p Props) checkRecovery() error {
	least := MinStreamRetention(p.MaxRecordAge)
	switch r := p.StreamRetention; {
	case r == 0:
		return fmt.Errorf("StreamRetention is required with StreamARN: declare the existing stream's retention, at least %s (MaxRecordAge %s + %s), raising it first if need be (aws kinesis increase-stream-retention-period)",
			hours(least), hours(p.MaxRecordAge), hours(RecoverableFor))
	case r%time.Hour != 0 || r < 24*time.Hour || r > MaxStreamRetention:
		return fmt.Errorf("StreamRetention is %v: want whole hours from 24h to %s", r, hours(MaxStreamRetention))
	case r < least:
		return fmt.Errorf("StreamRetention is %s: a batch given up on after MaxRecordAge %s would leave the stream less than %s later; want at least %s, or a lower MaxRecordAge",
			hours(r), hours(p.MaxRecordAge), hours(RecoverableFor), hours(least))
	}
	return nil
}

// checkArchive: an archive that expires no later than the table keeps
// nothing the table does not.
func (p Props) checkArchive() error {
	if d := p.ArchiveExpiryDays; d != 0 && (d <= p.RetentionDays || d > 36500) {
		return fmt.Errorf("ArchiveExpiryDays is %d: want 0 (keep) or more than RetentionDays (%d), at most 36500", d, p.RetentionDays)
	}
	return nil
}

// hours spells d in hours, as Kinesis counts retention: "192h".
func hours(d time.Duration) string { return strconv.FormatFloat(d.Hours(), 'f', -1, 64) + "h" }

// checkWords checks the props that are names or JSON.
func (p Props) checkWords() error {
	var errs []error
	if _, err := loglevel.Parse(p.LogLevel); err != nil {
		errs = append(errs, fmt.Errorf("LogLevel is %w", err))
	}
	if _, err := schema.ParseProjection(p.GSIProjection); err != nil {
		errs = append(errs, fmt.Errorf("GSIProjection: %w", err))
	}
	for _, o := range []struct {
		name string
		m    map[string]int
	}{{"ShardOverrides", p.ShardOverrides}, {"GSIShardOverrides", p.GSIShardOverrides}} {
		if _, err := bucketing.ParseOverrides(overrides(o.m)); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", o.name, err))
		}
	}
	return errors.Join(errs...)
}
