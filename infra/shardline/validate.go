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
	"github.com/shardline/shardline/internal/shardmap"
	"github.com/shardline/shardline/pkg/bucketing"
)

// Validate fills the defaults and checks every prop, so that a bad value is
// an error that names the prop, before NewPipeline (which panics on one, as
// CDK constructs do) or CloudFormation sees it.
func (p Props) Validate() error { return p.withDefaults().validate() }

// validate checks props that have their defaults.
func (p Props) validate() error {
	err := errors.Join(p.checkInts(), p.checkDurations(), p.checkRecordAge(), p.checkArchive(), p.checkWords(), p.checkTenants())
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
		{"FailedBatchRetentionDays", p.FailedBatchRetentionDays, MinFailedBatchRetentionDays, 3650},
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

// checkRecordAge: a batch must be given up on, to the FailedBatches
// bucket, before the stream trims its records, or they are lost. The
// created stream keeps them StreamRetention; an hour's margin covers
// Lambda's retries between two looks at the age. An existing stream's
// retention cannot be read at synth: docs/configuration.md asks for the
// same margin.
func (p Props) checkRecordAge() error {
	if most := StreamRetention - time.Hour; p.StreamARN == "" && p.MaxRecordAge > most {
		return fmt.Errorf("MaxRecordAge is %v: the created stream keeps records %s, so a batch must be given up on by %s, or its records leave the stream before they reach the FailedBatches bucket",
			p.MaxRecordAge, hours(StreamRetention), hours(most))
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
	if _, err := shardmap.ParseCopies(p.GSICopies); err != nil {
		errs = append(errs, fmt.Errorf("GSICopies: %w", err))
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
