package producer

import (
	"time"

	"github.com/shardline/shardline/internal/backoff"
)

// kinesisConfig is what the KinesisOptions set; NewKinesis holds the
// defaults.
type kinesisConfig struct {
	buffer      int
	linger      time.Duration
	maxAttempts int
	backoff     backoff.Policy
	aggregate   int // largest aggregated record; 0: no aggregation
	onResult    func(Outcome)
	key         func(id string) string
}

// KinesisOption configures NewKinesis.
type KinesisOption func(*kinesisConfig)

// WithBuffer sets how many events Put may hold before it blocks
// (default 10,000).
func WithBuffer(events int) KinesisOption {
	return func(c *kinesisConfig) { c.buffer = max(events, 1) }
}

// WithLinger sets how long an event may wait for others to share its
// PutRecords request (default 50 ms). A full batch goes at once.
func WithLinger(d time.Duration) KinesisOption {
	return func(c *kinesisConfig) { c.linger = max(d, 0) }
}

// WithRetries sets the PutRecords attempts a record gets (default 10) and
// the back-off between them: capped exponential, full jitter, from base
// (default 100 ms) to max (default 5 s).
func WithRetries(attempts int, base, max time.Duration) KinesisOption {
	return func(c *kinesisConfig) { c.maxAttempts, c.backoff = attempts, backoff.Policy{Base: base, Max: max} }
}

// WithAggregation packs small events into KPL aggregated records of at most
// DefaultAggregateBytes, so that one Kinesis record (and one PUT payload
// unit) carries many events. The ingest function reads them back.
// Aggregated events share their record's partition key, the first one's.
func WithAggregation() KinesisOption {
	return func(c *kinesisConfig) { c.aggregate = DefaultAggregateBytes }
}

// WithOnResult has fn called with the outcome of every event Put accepted,
// in the producer's goroutine: it should not block for long.
func WithOnResult(fn func(Outcome)) KinesisOption {
	return func(c *kinesisConfig) { c.onResult = fn }
}

// WithPartitionKey sets the partition key of an event from its id (default:
// the id itself, which spreads events over the shards, or the id's SHA-256
// in hex when the id is longer than MaxPartitionKeyLen). Put refuses an
// event whose key fn makes empty or too long (ErrPartitionKey), so that
// the key never fails the other events of its batch.
func WithPartitionKey(fn func(id string) string) KinesisOption {
	return func(c *kinesisConfig) { c.key = fn }
}
