// Package ddbstreams plays, on one machine, the part of Lambda's event source
// mapping for a DynamoDB stream: it reads the stream of DynamoDB Local shard
// by shard, turns the records into the events Lambda sends, filters them as
// the mapping's filter would, batches them by size and window, and invokes a
// handler with the shard's id (as a tumbling window does). A failing batch
// is retried until it succeeds, or, with a Retry policy, as the stack's
// mappings do: bisected, retried a bounded number of times, then given up
// on and sent, records included, to an on-failure destination. `make run`
// runs the counter and archive functions with it; tests read the stream
// with it.
package ddbstreams

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	st "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"github.com/shardline/shardline/internal/backoff"
	"github.com/shardline/shardline/internal/ddbclient"
)

// API is the part of the DynamoDB Streams client the poller uses.
type API interface {
	DescribeStream(context.Context, *dynamodbstreams.DescribeStreamInput, ...func(*dynamodbstreams.Options)) (*dynamodbstreams.DescribeStreamOutput, error)
	GetShardIterator(context.Context, *dynamodbstreams.GetShardIteratorInput, ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetShardIteratorOutput, error)
	GetRecords(context.Context, *dynamodbstreams.GetRecordsInput, ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetRecordsOutput, error)
}

// TableAPI reads a table's stream ARN.
type TableAPI interface {
	DescribeTable(context.Context, *dynamodb.DescribeTableInput, ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error)
}

// StreamARN is the ARN of table's stream.
func StreamARN(ctx context.Context, c TableAPI, table string) (string, error) {
	out, err := c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
	if err != nil {
		return "", fmt.Errorf("describe table %s: %w", table, err)
	}
	if out.Table.LatestStreamArn == nil {
		return "", fmt.Errorf("table %s has no stream", table)
	}
	return *out.Table.LatestStreamArn, nil
}

// Handler is what a batch is delivered to.
type Handler func(context.Context, events.DynamoDBTimeWindowEvent) error

// Poller delivers a stream's records to a Handler until its context ends.
type Poller struct {
	Client    API
	StreamARN string
	Handler   Handler
	Filter    func(events.DynamoDBEventRecord) bool // nil delivers every record
	BatchSize int                                   // records per invocation; default 1000
	Window    time.Duration                         // how long a partial batch waits; default 1 s
	Idle      time.Duration                         // pause after a round that read nothing; default 200 ms
	Log       *slog.Logger                          // default: discard
	// Retry, when set, bounds the retries of a failing batch as the
	// stack's event source mapping does; nil retries without limit.
	Retry *Retry

	processed, givenUp, delivered atomic.Int64
}

// shard is the poller's state of one stream shard.
type shard struct {
	id       string
	iterator *string
	closed   bool
	buf      []events.DynamoDBEventRecord
	since    time.Time // when buf got its first record
}

// Run polls until ctx ends; it returns nil then.
func (p *Poller) Run(ctx context.Context) error {
	p.defaults()
	shards := map[string]*shard{}
	var order []string
	for ctx.Err() == nil {
		if err := p.discover(ctx, shards, &order); err != nil && ctx.Err() == nil {
			p.Log.Warn("stream poller", slog.String("error", err.Error()))
		}
		read := 0
		for _, id := range order {
			n, err := p.poll(ctx, shards[id])
			if err != nil && ctx.Err() == nil {
				p.Log.Warn("stream poller", slog.String("shard", id), slog.String("error", err.Error()))
			}
			read += n
		}
		if read == 0 {
			backoff.Sleep(ctx, p.Idle)
		}
	}
	return nil
}

func (p *Poller) defaults() {
	if p.BatchSize <= 0 {
		p.BatchSize = 1000
	}
	if p.Window <= 0 {
		p.Window = time.Second
	}
	if p.Idle <= 0 {
		p.Idle = 200 * time.Millisecond
	}
	if p.Log == nil {
		p.Log = slog.New(slog.DiscardHandler)
	}
}

// discover adds the stream's shards not seen yet, in the order listed
// (parents before children).
func (p *Poller) discover(ctx context.Context, shards map[string]*shard, order *[]string) error {
	list, err := describe(ctx, p.Client, p.StreamARN)
	if err != nil {
		return err
	}
	for _, s := range list {
		if _, ok := shards[*s.ShardId]; !ok {
			shards[*s.ShardId] = &shard{id: *s.ShardId}
			*order = append(*order, *s.ShardId)
		}
	}
	return nil
}

// poll reads one page of a shard and delivers a batch when it is full, its
// window has passed, or the shard has ended.
func (p *Poller) poll(ctx context.Context, s *shard) (int, error) {
	if s.closed && len(s.buf) == 0 {
		return 0, nil
	}
	n := 0
	if !s.closed {
		recs, err := p.next(ctx, s)
		if err != nil {
			return 0, err
		}
		n = len(recs)
		for _, r := range recs {
			if p.Filter == nil || p.Filter(r) {
				if len(s.buf) == 0 {
					s.since = time.Now()
				}
				s.buf = append(s.buf, r)
			}
		}
	}
	for len(s.buf) > 0 && (len(s.buf) >= p.BatchSize || s.closed || time.Since(s.since) >= p.Window) {
		batch := s.buf[:min(len(s.buf), p.BatchSize)]
		if err := p.deliver(ctx, s.id, batch); err != nil {
			return n, err
		}
		p.processed.Add(int64(len(batch)))
		s.buf = s.buf[len(batch):]
		s.since = time.Now()
	}
	return n, nil
}

func (p *Poller) next(ctx context.Context, s *shard) ([]events.DynamoDBEventRecord, error) {
	if s.iterator == nil {
		it, err := iterator(ctx, p.Client, p.StreamARN, s.id)
		if err != nil {
			return nil, err
		}
		s.iterator = it
	}
	recs, nextIt, err := page(ctx, p.Client, p.StreamARN, s.iterator, p.BatchSize)
	var expired *st.ExpiredIteratorException
	if errors.As(err, &expired) {
		s.iterator = nil // start the shard again: the handler is idempotent
	}
	if err != nil {
		return nil, err
	}
	s.iterator = nextIt
	s.closed = nextIt == nil
	return recs, nil
}

// deliver runs one batch until it succeeds or, with a Retry policy, is
// given up on. It returns an error only when ctx ends: the batch is then
// not done, and comes again after a restart as after a crash.
func (p *Poller) deliver(ctx context.Context, shardID string, batch []events.DynamoDBEventRecord) error {
	if p.Retry != nil {
		p.Retry.process(ctx, p, shardID, batch, p.Retry.RetryAttempts)
		return ctx.Err()
	}
	for attempt := 0; ; attempt++ {
		err := p.invoke(ctx, shardID, batch)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		p.Log.Warn("stream batch failed; retrying", slog.String("shard", shardID), slog.Int("records", len(batch)),
			slog.Int("attempt", attempt+1), slog.String("error", err.Error()))
		backoff.Sleep(ctx, retryPause(attempt))
	}
}

// invoke calls the handler with batch as Lambda would, turning a panic
// into the function error Lambda would see.
func (p *Poller) invoke(ctx context.Context, shardID string, batch []events.DynamoDBEventRecord) (err error) {
	ev := events.DynamoDBTimeWindowEvent{}
	ev.Records = append([]events.DynamoDBEventRecord(nil), batch...)
	ev.ShardID = shardID
	ev.EventSourceARN = p.StreamARN
	ev.State = map[string]string{}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("function panicked: %v", r)
		}
	}()
	return p.Handler(ctx, ev)
}

// retryPause spaces the attempts at a failing batch: 100 ms more each time,
// at most a second.
func retryPause(attempt int) time.Duration {
	return time.Duration(min(attempt+1, 10)) * 100 * time.Millisecond
}

// Processed is how many records (of those the filter passes) the poller is
// done with: delivered, or given up on.
func (p *Poller) Processed() int64 { return p.processed.Load() }

// GivenUp is how many records the poller has given up on.
func (p *Poller) GivenUp() int64 { return p.givenUp.Load() }

// Delivered is how many on-failure records reached the destination.
func (p *Poller) Delivered() int64 { return p.delivered.Load() }

// Read returns every record now in the stream, by shard, from the trim
// horizon: what a test feeds to a handler in batches of its choosing.
func Read(ctx context.Context, c API, streamARN string) (map[string][]events.DynamoDBEventRecord, error) {
	list, err := describe(ctx, c, streamARN)
	if err != nil {
		return nil, err
	}
	out := map[string][]events.DynamoDBEventRecord{}
	for _, s := range list {
		it, err := iterator(ctx, c, streamARN, *s.ShardId)
		if err != nil {
			return nil, err
		}
		empty := 0
		for it != nil {
			recs, next, err := page(ctx, c, streamARN, it, 1000)
			if err != nil {
				return nil, err
			}
			out[*s.ShardId] = append(out[*s.ShardId], recs...)
			if empty = empty + 1; len(recs) > 0 {
				empty = 0
			}
			if empty == 3 {
				break // an open shard with nothing more for now
			}
			it = next
		}
	}
	return out, nil
}

func describe(ctx context.Context, c API, arn string) ([]st.Shard, error) {
	var shards []st.Shard
	in := &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(arn)}
	for {
		out, err := c.DescribeStream(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("describe stream: %w", err)
		}
		shards = append(shards, out.StreamDescription.Shards...)
		if out.StreamDescription.LastEvaluatedShardId == nil {
			return shards, nil
		}
		in.ExclusiveStartShardId = out.StreamDescription.LastEvaluatedShardId
	}
}

func iterator(ctx context.Context, c API, arn, shardID string) (*string, error) {
	out, err := c.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{
		StreamArn: aws.String(arn), ShardId: aws.String(shardID), ShardIteratorType: st.ShardIteratorTypeTrimHorizon,
	})
	if err != nil {
		return nil, fmt.Errorf("shard iterator of %s: %w", shardID, err)
	}
	return out.ShardIterator, nil
}

func page(ctx context.Context, c API, arn string, it *string, limit int) ([]events.DynamoDBEventRecord, *string, error) {
	out, err := c.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: it, Limit: aws.Int32(int32(min(limit, 1000)))})
	if err != nil {
		return nil, it, fmt.Errorf("get records: %w", err)
	}
	recs := make([]events.DynamoDBEventRecord, 0, len(out.Records))
	for _, r := range out.Records {
		e, err := Record(r, arn)
		if err != nil {
			return nil, it, err
		}
		recs = append(recs, e)
	}
	return recs, out.NextShardIterator, nil
}

// Static is a client of the stream of the DynamoDB Local at endpoint, with
// the access key its user name gives (ddbclient.Local).
func Static(endpoint string) *dynamodbstreams.Client {
	base, key := ddbclient.Local(endpoint)
	return dynamodbstreams.New(dynamodbstreams.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(base),
		Credentials:  credentials.NewStaticCredentialsProvider(key, "local", ""),
	})
}
