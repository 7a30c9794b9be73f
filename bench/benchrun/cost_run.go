package benchrun

import (
	"context"
	"fmt"
	"hash/fnv"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/shardline/shardline/internal/archive"
	"github.com/shardline/shardline/internal/counts"
	"github.com/shardline/shardline/internal/ddbclient"
	"github.com/shardline/shardline/internal/emf"
	"github.com/shardline/shardline/internal/ingest"
	"github.com/shardline/shardline/internal/schema"
	"github.com/shardline/shardline/internal/shardmap"
)

// costEnv is what every workload's measurement shares.
type costEnv struct {
	local    *dynamodb.Client // DynamoDB Local: the bookkeeping and the counters
	stubURL  string           // the latency stub: the event items
	start    time.Time        // a UTC midnight
	prices   Prices
	seedWRU  float64 // the seed design's write units per event, measured
	seedSize int     // its item's bytes
	table    string
}

// sim is one workload's run: its fleet of containers, the stream, the
// three functions and what they cost.
type sim struct {
	w          CostWorkload
	env        costEnv
	clock      *simClock
	book       *ledger
	split      *splitClient
	sink       *streamSink
	handlers   []*ingest.Handler
	batchers   []cutter[events.KinesisEventRecord]
	counter    *counts.Function
	lsm        *counts.LSM // the scheduled fold's, on the simulated clock
	nextFold   time.Time
	arch       *archive.Function
	counterCut []cutter[arrival]
	archiveCut []cutter[arrival]
	store      *countingStore
	logs       [3]*countingWriter // ingest, counter, archive
	fn         [3]*fnMeter

	pairs   map[[2]int]bool // (container, source) pairs that wrote
	sources map[int]bool
	kshards int

	events, counted, archived int
	generated                 int // events the producers sent, in batches or not
	putUnits, firehoseBytes   int
	raw                       [][]byte // a sample of the events, for their compressed size
}

// kinesisShards sizes the workload's stream: records or bytes, whichever
// needs more shards at kinesisFill of a shard's limits.
func kinesisShards(rate float64, eventBytes int) int {
	byRecords := rate / (1000 * kinesisFill)
	byBytes := rate * float64(eventBytes) / (1 << 20 * kinesisFill)
	return max(1, int(math.Ceil(max(byRecords, byBytes))))
}

func newSim(ctx context.Context, w CostWorkload, env costEnv, eventBytes int) (*sim, error) {
	s := &sim{w: w, env: env, clock: &simClock{t: env.start}, pairs: map[[2]int]bool{}, sources: map[int]bool{}, store: &countingStore{}}
	in := schema.CreateTableInput(env.table)
	in.StreamSpecification = nil // the ledger's table: the stream is simulated (streamSink)
	if err := schema.CreateFrom(ctx, env.local, in); err != nil {
		return nil, fmt.Errorf("cost model: create %s: %w", env.table, err)
	}
	s.book = newLedger(env.local)
	rate := w.Rate()
	s.sink = newStreamSink(max(minStreamShards, int(math.Ceil(rate/partitionWCU))), s.clock)
	s.split = &splitClient{events: ddbclient.Static(env.stubURL, 64), book: s.book, sink: s.sink}
	for i := range s.logs {
		s.logs[i] = &countingWriter{}
		s.fn[i] = &fnMeter{}
	}
	cfg := ingest.DefaultConfig(env.table)
	if w.GSICopies != "" {
		cfg.GSICopies = w.GSICopies
	}
	cfg.Shards.Overrides, cfg.GSIShards.Overrides = map[string]int{}, map[string]int{}
	for _, g := range w.Groups {
		for i := range g.Count {
			if g.Shards > 0 {
				cfg.Shards.Overrides[g.name(i)] = g.Shards
			}
			if g.GSIShards > 0 {
				cfg.GSIShards.Overrides[g.name(i)] = g.GSIShards
			}
		}
	}
	if w.QuietYesterday {
		if err := seedYesterday(ctx, env, cfg, w); err != nil {
			return nil, err
		}
	}
	s.kshards = kinesisShards(rate, eventBytes)
	for range s.kshards * ingestParallel {
		s.handlers = append(s.handlers, ingest.New(cfg, s.split, ingest.Options{
			Now:     s.clock.now,
			Logger:  infoLogger(s.logs[0]),
			Metrics: emf.NewInLog(s.logs[0], map[string]string{"Function": "ingest"}),
		}))
		s.batchers = append(s.batchers, cutter[events.KinesisEventRecord]{m: ingestMapping})
	}
	s.counter = counts.New(counts.Config{Table: env.table, Retention: retentionDays * 24 * time.Hour, LogLevel: slog.LevelInfo},
		s.book, counts.Options{Logger: infoLogger(s.logs[1]), Metrics: emf.NewInLog(s.logs[1], counts.Dimensions())})
	s.lsm = &counts.LSM{Client: s.book, Table: env.table, Retention: retentionDays * 24 * time.Hour, Now: s.clock.now}
	s.arch = &archive.Function{Store: s.store, Log: infoLogger(s.logs[2]), Metrics: emf.NewInLog(s.logs[2], map[string]string{"Function": "archive"})}
	for range s.sink.shards {
		s.counterCut = append(s.counterCut, cutter[arrival]{m: stackMapping})
		s.archiveCut = append(s.archiveCut, cutter[arrival]{m: archiveMapping})
	}
	return s, nil
}

func infoLogger(w io.Writer) *slog.Logger {
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

// run sends the workload's events through the fleet.
func (s *sim) run(ctx context.Context) error {
	rng := rand.New(rand.NewPCG(22, uint64(len(s.w.Groups))))
	sents, names := s.w.arrivals(s.env.start, rng)
	typs := eventTypes(10)
	for n, e := range sents {
		id := "e" + strconv.Itoa(n)
		data := telemetry(id, names[e.source], typs[rng.IntN(len(typs))], n, e.at)
		s.account(id, data)
		h := fnv.New32a()
		h.Write([]byte(id)) // the producer's partition key is the event's id
		c := int(h.Sum32() % uint32(len(s.handlers)))
		seq := strconv.Itoa(1_000_000 + n)
		rec := events.KinesisEventRecord{EventSource: "aws:kinesis", EventID: "shardId-" + strconv.Itoa(c/ingestParallel) + ":" + seq,
			Kinesis: events.KinesisRecord{Data: data, PartitionKey: id, SequenceNumber: seq, ApproximateArrivalTimestamp: events.SecondsEpochTime{Time: e.at}}}
		if done := s.batchers[c].add(e.at, rec, len(data)+len(id)); done != nil {
			if err := s.ingest(ctx, c, e.at, done, names); err != nil {
				return err
			}
		}
		s.pairs[[2]int{c, e.source}] = true
		s.sources[e.source] = true
	}
	// The window's last fold, as the schedule's next would: a window of
	// FoldEvery or less folds once, so the fold's writes are priced for
	// every window.
	if len(sents) > 0 {
		return s.foldNow(ctx)
	}
	return nil
}

// account adds what an event costs outside the handlers: its Kinesis PUT
// payload units and its Firehose ingestion, had it gone there.
func (s *sim) account(id string, data []byte) {
	s.generated++
	s.putUnits += (len(data) + len(id) + kinesisPutUnit - 1) / kinesisPutUnit
	s.firehoseBytes += (len(data) + 1 + firehoseRecordInc - 1) / firehoseRecordInc * firehoseRecordInc
	if len(s.raw) < 20000 {
		s.raw = append(s.raw, data)
	}
}

// ingest invokes container c's handler with a batch at simulated time at,
// then hands the stream records its writes made to the counter's and the
// archive's mappings.
func (s *sim) ingest(ctx context.Context, c int, at time.Time, recs []events.KinesisEventRecord, names []string) error {
	s.clock.set(at)
	if err := s.fold(ctx, at); err != nil {
		return err
	}
	t0 := time.Now()
	resp, err := s.handlers[c].Kinesis(ctx, events.KinesisEvent{Records: recs})
	s.fn[0].add(time.Since(t0), ingestMemoryMB)
	if err != nil {
		return fmt.Errorf("ingest, container %d: %w", c, err)
	}
	if len(resp.BatchItemFailures) > 0 {
		return fmt.Errorf("ingest, container %d: %d records failed", c, len(resp.BatchItemFailures))
	}
	s.events += len(recs)
	for shard, arrived := range s.sink.take() {
		for _, a := range arrived {
			if done := s.counterCut[shard].add(a.at, a, a.bytes); done != nil {
				if err := s.count(ctx, shard, done); err != nil {
					return err
				}
			}
			if done := s.archiveCut[shard].add(a.at, a, a.bytes); done != nil {
				if err := s.archiveBatch(ctx, done); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func records(as []arrival) []events.DynamoDBEventRecord {
	out := make([]events.DynamoDBEventRecord, len(as))
	for i, a := range as {
		out[i] = a.rec
	}
	return out
}

func (s *sim) count(ctx context.Context, shard int, batch []arrival) error {
	var ev events.DynamoDBTimeWindowEvent
	ev.ShardID = fmt.Sprintf("shardId-%020d", shard)
	ev.Records = records(batch)
	t0 := time.Now()
	_, err := s.counter.Invoke(ctx, ev)
	s.fn[1].add(time.Since(t0), counterMemoryMB)
	if err != nil {
		return fmt.Errorf("counter, stream shard %d: %w", shard, err)
	}
	s.counted += len(batch)
	return nil
}

// fold plays the scheduled fold on the simulated clock: a fold every
// counts.FoldEvery (as LSM.Minute does within its minute), and the hour's
// roll-up when it is due. Its writes and reads go through the ledger,
// priced as the counter's; its Lambda time is the counter's too.
func (s *sim) fold(ctx context.Context, at time.Time) error {
	if s.nextFold.IsZero() {
		s.nextFold = at.Truncate(counts.FoldEvery).Add(counts.FoldEvery)
	}
	if at.Before(s.nextFold) {
		return nil
	}
	s.nextFold = at.Truncate(counts.FoldEvery).Add(counts.FoldEvery)
	return s.foldNow(ctx)
}

// foldNow folds, and rolls up if it is due, at the simulated clock's time.
func (s *sim) foldNow(ctx context.Context) error {
	t0 := time.Now()
	defer func() { s.fn[1].add(time.Since(t0), counterMemoryMB) }()
	if _, err := s.lsm.Fold(ctx); err != nil {
		return fmt.Errorf("fold: %w", err)
	}
	if _, _, err := s.lsm.RollupIfDue(ctx); err != nil {
		return fmt.Errorf("roll-up: %w", err)
	}
	return nil
}

func (s *sim) archiveBatch(ctx context.Context, batch []arrival) error {
	t0 := time.Now()
	err := s.arch.Invoke(ctx, events.DynamoDBEvent{Records: records(batch)})
	s.fn[2].add(time.Since(t0), archiveMemoryMB)
	if err != nil {
		return fmt.Errorf("archive: %w", err)
	}
	s.archived += len(batch)
	return nil
}

// touches is how many distinct (container, source) pairs a group's
// sources make in d, each event going to one of c containers at random
// (by its id): a pair's first event of an hour marks the hour, of a day
// reads the day's shard records.
func touches(g SourceGroup, c int, d time.Duration) float64 {
	n := g.Rate * d.Seconds()
	return float64(g.Count) * float64(c) * (1 - math.Pow(1-1/float64(c), n))
}

// refreshes is how often a year-round (container, source) pair reads the
// source's shard record again, an hour: at its first event once
// shardmap.CacheFor has passed since the last read.
func refreshes(g SourceGroup, c int) float64 {
	perSecond := g.Rate / float64(c) // the pair's events a second
	if perSecond == 0 {
		return 0
	}
	return float64(g.Count) * float64(c) * min(perSecond*3600, 3600/(shardmap.CacheFor.Seconds()+1/perSecond))
}

// usage scales what the run measured to a million events. Per-event line
// items scale by the events their function saw; the hour marks' writes by
// the sources a steady hour has (the first container to meet a source's
// hour marks it; the others read the index and find it), their reads by
// the (container, source) pairs it has (touches), the shard records and
// catalogue by the sources a day has; see docs/cost.md.
func (s *sim) usage(m CostMeasured) Usage {
	const million = 1e6
	rate := s.w.Rate()
	perEvent := func(x float64, n int) float64 { return x / float64(max(1, n)) * million }
	hours := million / (rate * 3600) // hours a million events take
	days := hours / 24
	var hourTouches, sourceHours, dayTouches, refreshRRU float64
	for _, g := range s.w.Groups {
		hourTouches += touches(g, m.Containers, time.Hour)
		sourceHours += touches(g, 1, time.Hour)
		dayTouches += touches(g, m.Containers, 24*time.Hour)
		refreshRRU += refreshes(g, m.Containers) * 1 // a strongly consistent read of a small item
	}
	pairs, sources := float64(max(1, m.Pairs)), float64(max(1, m.Sources))
	u := Usage{
		EventWRU:       perEvent(m.EventWRU, m.Events),
		GSIWRU:         perEvent(m.GSIWRU, m.Events),
		HourMarkWRU:    m.HourMarks.WRU / sources * sourceHours * hours,
		ShardRecordWRU: m.ShardRecords.WRU / sources * float64(s.w.Sources()) * days,
		CatalogueWRU:   m.Catalogue.WRU / sources * float64(s.w.Sources()) * days,
		DemandWRU:      perEvent(m.Demand.WRU, m.Events),
		CounterWRU:     perEvent(m.Counter.WRU, m.CounterEvents),
		BookkeepingRRU: m.HourMarks.RRU/pairs*hourTouches*hours + m.ShardRecords.RRU/pairs*dayTouches*days + refreshRRU*hours +
			perEvent(m.Counter.RRU, m.CounterEvents),
		StreamRecords: 2 * million,
		TableGBMonth:  perEvent(float64(m.EventItemBytes), m.Events) / gib * retentionDays * 24 / hoursPerMonth,

		KinesisShardHours: float64(m.KinesisShards) * hours,
		KinesisPutUnits:   perEvent(float64(m.PutUnits), m.Sent),

		S3Puts:    perEvent(float64(m.ArchiveObjects), m.ArchiveEvents),
		S3GBMonth: perEvent(float64(m.ArchiveBytes), m.ArchiveEvents) / gib,
		LogBytes: perEvent(float64(m.LogBytes[0]+m.PlatformLogBytes[0]), m.Events) +
			perEvent(float64(m.LogBytes[1]+m.PlatformLogBytes[1]), m.CounterEvents) +
			perEvent(float64(m.LogBytes[2]+m.PlatformLogBytes[2]), m.ArchiveEvents),
	}
	fns := []struct {
		name   string
		memory int
		events int
	}{{"ingest", ingestMemoryMB, m.Events}, {"counter", counterMemoryMB, m.CounterEvents}, {"archive", archiveMemoryMB, m.ArchiveEvents}}
	for i, f := range fns {
		u.Functions = append(u.Functions, FunctionUsage{Name: f.name, MemoryMB: f.memory,
			Requests: perEvent(float64(m.Invocations[i]), f.events), Seconds: perEvent(m.BilledSeconds[i], f.events)})
	}
	u.Functions = append(u.Functions, FunctionUsage{Name: "query", MemoryMB: queryMemoryMB})
	return u
}

// anchors are the two designs a user would pick instead, for the same
// events: the seed articles' (one PutItem per event under one key, its
// items kept a month) and Firehose Direct PUT to S3 (gzip, default
// buffering).
func (s *sim) anchors(m CostMeasured) (seed, firehose Usage) {
	const million = 1e6
	seed.EventWRU = s.env.seedWRU * million
	seed.TableGBMonth = float64(s.env.seedSize+dynamoItemOverhead) * million / gib * retentionDays * 24 / hoursPerMonth
	firehose.FirehoseGiB = float64(m.FirehoseBytes) / float64(max(1, m.Sent)) * million / gib
	rawPerMillion := m.MeanEventBytes * million
	duration := time.Duration(million / s.w.Rate() * float64(time.Second))
	firehose.S3Puts = math.Ceil(max(rawPerMillion/firehoseBufferSize, duration.Seconds()/firehoseBufferTime.Seconds()))
	firehose.S3GBMonth = rawPerMillion * float64(m.GzipBytes) / float64(max(1, m.RawBytes)) / gib
	return seed, firehose
}
