// Package kinesispoll plays, on one machine, Lambda's event source mapping
// for a Kinesis stream against a real Kinesis API (kinesalite for `make run`
// and the tests): it lists the shards, reads each from its trim horizon with
// GetShardIterator and GetRecords, batches the records by size and window,
// and invokes a handler with the events.KinesisEvent Lambda would send. The
// handler's batchItemFailures are honoured, function errors bisect the
// batch, and after the retry limit or the record age the batch is given up
// on and an on-failure record of Lambda's shape, the records included, goes
// to the destination (an S3 bucket, as the stack's mapping has).
// The checkpoint of a shard moves past a batch only once it is done.
package kinesispoll

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/shardline/shardline/internal/backoff"
	"github.com/shardline/shardline/local/esm"
	"github.com/shardline/shardline/local/kinesisread"
	"github.com/shardline/shardline/ops/onfailure"
)

// Destination receives the on-failure record of each batch given up on.
type Destination func(context.Context, onfailure.Record) error

// Poller delivers a stream's records to a handler until its context ends.
// Set the fields, then call Run once.
type Poller struct {
	Client    kinesisread.API
	StreamARN string
	Handler   esm.Handler
	// BatchSize is the most records an invocation gets; default 100
	// (Lambda's).
	BatchSize int
	// Window is how long records wait for a batch to fill
	// (MaximumBatchingWindow); 0 invokes as soon as records are read.
	Window time.Duration
	// Timeout is each invocation's deadline; default 60 s.
	Timeout time.Duration
	// RetryAttempts is how often a batch is retried before it is given
	// up on; -1 retries without limit (Lambda's default), 0 not at all.
	RetryAttempts int
	Bisect        bool          // split a batch in two when the function errs
	MaxRecordAge  time.Duration // give up on records older than this; 0 has no limit
	// OnFailure receives what is given up on; nil logs and drops it.
	OnFailure Destination
	// FunctionARN names the function in on-failure records; default a
	// local ARN in the stream's region and account.
	FunctionARN string
	// Idle is the pause after a read that found nothing; default 200 ms
	// (Lambda polls a shard once a second).
	Idle time.Duration
	Log  *slog.Logger // default: discard

	stream     kinesisread.ARN
	driver     *esm.Driver
	processed  atomic.Int64 // records checkpointed: done or given up on
	givenUp    atomic.Int64 // records given up on
	deliveries atomic.Int64 // on-failure records delivered
}

// Processed is how many records the poller has checkpointed: delivered to
// the handler and done with, or given up on.
func (p *Poller) Processed() int64 { return p.processed.Load() }

// GivenUp is how many records the poller has given up on.
func (p *Poller) GivenUp() int64 { return p.givenUp.Load() }

// Delivered is how many on-failure records reached the destination.
func (p *Poller) Delivered() int64 { return p.deliveries.Load() }

// Run polls until ctx ends, every shard in a goroutine of its own, a child
// shard once its parents are read to their end. It returns nil then, or an
// error at once if the configuration is unusable.
func (p *Poller) Run(ctx context.Context) error {
	if err := p.init(); err != nil {
		return err
	}
	var (
		mu       sync.Mutex
		started  = map[string]bool{}
		finished = map[string]bool{}
		wg       sync.WaitGroup
	)
	defer wg.Wait()
	for ctx.Err() == nil {
		shards, err := kinesisread.Shards(ctx, p.Client, p.stream)
		if err != nil && ctx.Err() == nil {
			p.Log.Warn("kinesis poller: list shards", slog.String("error", err.Error()))
		}
		known := map[string]bool{}
		for _, s := range shards {
			known[aws.ToString(s.ShardId)] = true
		}
		mu.Lock()
		for _, s := range shards {
			id := aws.ToString(s.ShardId)
			if started[id] || !parentsDone(s, known, finished) {
				continue
			}
			started[id] = true
			wg.Go(func() {
				if p.runShard(ctx, id) {
					mu.Lock()
					finished[id] = true
					mu.Unlock()
				}
			})
		}
		mu.Unlock()
		backoff.Sleep(ctx, 10*p.Idle)
	}
	return nil
}

// parentsDone: Lambda reads a child shard only after its parents, unless
// they have left the stream.
func parentsDone(s types.Shard, known, finished map[string]bool) bool {
	for _, parent := range []*string{s.ParentShardId, s.AdjacentParentShardId} {
		if id := aws.ToString(parent); id != "" && known[id] && !finished[id] {
			return false
		}
	}
	return true
}

func (p *Poller) init() error {
	var err error
	if p.stream, err = kinesisread.ParseARN(p.StreamARN); err != nil {
		return fmt.Errorf("kinesis poller: %w", err)
	}
	if p.Client == nil || p.Handler == nil {
		return errors.New("kinesis poller: Client and Handler are required")
	}
	if p.BatchSize <= 0 {
		p.BatchSize = 100
	}
	p.BatchSize = min(p.BatchSize, 10000)
	if p.Timeout <= 0 {
		p.Timeout = 60 * time.Second
	}
	if p.Idle <= 0 {
		p.Idle = 200 * time.Millisecond
	}
	if p.Log == nil {
		p.Log = slog.New(slog.DiscardHandler)
	}
	if p.FunctionARN == "" {
		p.FunctionARN = fmt.Sprintf("arn:aws:lambda:%s:%s:function:shardline-ingest-local", p.stream.Region, p.stream.Account)
	}
	p.driver = &esm.Driver{
		Handler: p.Handler, BatchSize: p.BatchSize, Timeout: p.Timeout,
		RetryAttempts: p.RetryAttempts, Bisect: p.Bisect, MaxRecordAge: p.MaxRecordAge,
	}
	return nil
}

// shardState is what the poller holds of one shard.
type shardState struct {
	id         string
	iterator   *string
	checkpoint string // the last record done with; "" before the first
	buf        []events.KinesisEventRecord
	since      time.Time // when buf got its oldest record
	ended      bool      // a closed shard read to its end
}

// runShard reads and delivers one shard until ctx ends (false) or the
// shard is closed and done (true).
func (p *Poller) runShard(ctx context.Context, id string) bool {
	s := &shardState{id: id}
	log := p.Log.With(slog.String("shard", id))
	for ctx.Err() == nil {
		n, err := p.read(ctx, s)
		if err != nil {
			if ctx.Err() == nil {
				log.Warn("kinesis poller: read", slog.String("error", err.Error()))
				backoff.Sleep(ctx, p.Idle)
			}
			continue
		}
		for p.due(s) {
			batch := s.buf[:min(len(s.buf), p.BatchSize)]
			p.process(ctx, s, batch)
			if ctx.Err() != nil {
				return false // not checkpointed: as after a crash, the batch comes again
			}
			s.checkpoint = batch[len(batch)-1].Kinesis.SequenceNumber
			s.buf = s.buf[len(batch):]
			s.since = time.Now()
			p.processed.Add(int64(len(batch)))
		}
		if s.ended && len(s.buf) == 0 {
			log.Info("kinesis poller: shard read to its end")
			return true
		}
		if n == 0 {
			backoff.Sleep(ctx, p.Idle)
		}
	}
	return false
}

// read gets the next page of the shard into its buffer.
func (p *Poller) read(ctx context.Context, s *shardState) (int, error) {
	if s.ended {
		return 0, nil
	}
	if s.iterator == nil {
		pos := kinesisread.TrimHorizon
		if s.checkpoint != "" {
			pos = kinesisread.After(s.checkpoint)
		}
		if len(s.buf) > 0 {
			pos = kinesisread.After(s.buf[len(s.buf)-1].Kinesis.SequenceNumber)
		}
		it, err := kinesisread.Iterator(ctx, p.Client, p.stream, s.id, pos)
		if err != nil {
			return 0, err
		}
		s.iterator = it
	}
	page, err := kinesisread.Read(ctx, p.Client, p.stream, s.id, s.iterator, p.BatchSize)
	var expired *types.ExpiredIteratorException
	if errors.As(err, &expired) {
		s.iterator = nil // a new one after the last record read
	}
	if err != nil {
		return 0, err
	}
	s.iterator = page.Next
	s.ended = page.Next == nil
	if len(s.buf) == 0 && len(page.Records) > 0 {
		s.since = time.Now()
	}
	s.buf = append(s.buf, page.Records...)
	return len(page.Records), nil
}

// due says whether the buffer makes a batch now: full, its window passed,
// or the shard ended.
func (p *Poller) due(s *shardState) bool {
	return len(s.buf) > 0 && (len(s.buf) >= p.BatchSize || s.ended || time.Since(s.since) >= p.Window)
}

// process runs one batch through the driver, sending what it gives up on
// to the destination.
func (p *Poller) process(ctx context.Context, s *shardState, batch []events.KinesisEventRecord) {
	d := *p.driver
	d.OnGiveUp = func(ctx context.Context, g esm.GiveUp) {
		if ctx.Err() != nil {
			return // stopping, not giving up: the batch is not checkpointed
		}
		p.givenUp.Add(int64(len(g.Records)))
		p.deliver(ctx, s.id, g)
	}
	d.Process(ctx, batch)
}

// deliver sends the on-failure record of g, retrying a failed send a few
// times as Lambda does; the records are not read again either way.
func (p *Poller) deliver(ctx context.Context, shardID string, g esm.GiveUp) {
	rec, err := onfailure.NewKinesis(onfailure.GiveUp{
		StreamARN: p.stream.Full, ShardID: shardID, Condition: g.Condition, Invocations: g.Invocations,
		FunctionError: g.FunctionError, FunctionARN: p.FunctionARN, At: time.Now(),
	}, g.Records)
	log := p.Log.With(slog.String("shard", shardID), slog.String("condition", g.Condition), slog.Int("records", len(g.Records)),
		slog.String("start_sequence_number", g.Records[0].Kinesis.SequenceNumber),
		slog.String("end_sequence_number", g.Records[len(g.Records)-1].Kinesis.SequenceNumber))
	if err != nil {
		log.Error("kinesis poller: gave up on a batch and could not write its on-failure record", slog.String("error", err.Error()))
		return
	}
	if p.OnFailure == nil {
		log.Error("kinesis poller: gave up on a batch; no on-failure destination, so only this log line tells of it")
		return
	}
	for attempt := range 3 {
		if err = p.OnFailure(ctx, rec); err == nil {
			p.deliveries.Add(1)
			log.Warn("kinesis poller: gave up on a batch; its on-failure record, records included, went to the destination")
			return
		}
		backoff.Sleep(ctx, time.Duration(attempt+1)*p.Idle)
	}
	log.Error("kinesis poller: gave up on a batch and could not deliver its on-failure record", slog.String("error", err.Error()))
}
