package shardline

import (
	"fmt"
	"time"

	"github.com/shardline/shardline/internal/ingest"
	"github.com/shardline/shardline/internal/schema"
)

// validate checks the props with the functions' own rules, so a bad value
// fails at synth rather than at the first invocation.
func (p Props) validate() error {
	env := p.ingestEnv("table")
	if _, err := ingest.ConfigFromEnv(func(k string) string { return env[k] }); err != nil {
		return fmt.Errorf("shardline props: %w", err)
	}
	if _, err := schema.ParseProjection(p.GSIProjection); err != nil {
		return fmt.Errorf("shardline props: %w", err)
	}
	switch {
	case p.BatchSize < 1 || p.BatchSize > 10000:
		return fmt.Errorf("shardline props: BatchSize %d is outside [1, 10000]", p.BatchSize)
	case p.ParallelizationFactor < 1 || p.ParallelizationFactor > 10:
		return fmt.Errorf("shardline props: ParallelizationFactor %d is outside [1, 10]", p.ParallelizationFactor)
	case p.RetryAttempts < 0 || p.RetryAttempts > 10000:
		return fmt.Errorf("shardline props: RetryAttempts %d is outside [0, 10000]", p.RetryAttempts)
	case p.MaxRecordAge < time.Minute || p.MaxRecordAge > 7*24*time.Hour:
		return fmt.Errorf("shardline props: MaxRecordAge %v is outside [1m, 168h]", p.MaxRecordAge)
	case p.BatchingWindow < 0 || p.BatchingWindow > 300*time.Second:
		return fmt.Errorf("shardline props: BatchingWindow %v is outside [0, 300s]", p.BatchingWindow)
	case p.IngestTimeout < 10*time.Second || p.IngestTimeout > 15*time.Minute:
		return fmt.Errorf("shardline props: IngestTimeout %v is outside [10s, 15m]", p.IngestTimeout)
	}
	return nil
}
