package archive

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/shardline/shardline/internal/emf"
)

// Store keeps objects: the archive bucket, or a directory in `make run`.
type Store interface {
	Put(ctx context.Context, key string, body []byte) error
}

// DefaultConcurrency is how many objects a batch puts at once.
const DefaultConcurrency = 8

// Function is the archive Lambda function. Build one per container with New.
type Function struct {
	Store       Store
	Log         *slog.Logger // default: discard
	Metrics     *emf.Logger  // default: none
	Concurrency int          // objects put at once; default DefaultConcurrency
}

// Options are the parts of a Function that the local server and tests vary.
type Options struct {
	Logger      *slog.Logger // default: discard
	Metrics     *emf.Logger  // default: none
	Concurrency int          // objects put at once; default DefaultConcurrency
}

// New returns the archive function for cfg, writing to its bucket through
// client. (make run and tests that keep objects elsewhere set Store.)
func New(cfg Config, client Client, o Options) *Function {
	return &Function{Store: S3{Client: client, Bucket: cfg.Bucket}, Log: o.Logger, Metrics: o.Metrics, Concurrency: o.Concurrency}
}

// Stats describe what one batch did.
type Stats struct {
	Records  int // stream records delivered
	Archived int // events written
	Skipped  int // records that are not stored events
	Objects  int // objects written
	Bytes    int // their compressed size
}

// Invoke is the Lambda entry point. An error fails the invocation and the
// mapping delivers the batch again, which rewrites the same objects.
func (f *Function) Invoke(ctx context.Context, ev events.DynamoDBEvent) error {
	start := time.Now()
	st, err := f.Archive(ctx, ev.Records)
	attrs := []slog.Attr{
		slog.Int("records", st.Records), slog.Int("archived", st.Archived), slog.Int("skipped", st.Skipped),
		slog.Int("objects", st.Objects), slog.Int("bytes", st.Bytes), slog.Duration("duration", time.Since(start)),
	}
	level := slog.LevelInfo
	if err != nil {
		level = slog.LevelWarn
		attrs = append(attrs, slog.String("error", err.Error()))
	}
	if merr := f.Metrics.Log(ctx, f.log(), level, "archive", time.Now(), attrs,
		emf.Metric{Name: "Archived", Value: float64(st.Archived), Unit: "Count"},
		emf.Metric{Name: "ArchiveObjects", Value: float64(st.Objects), Unit: "Count"},
		emf.Metric{Name: "ArchivedBytes", Value: float64(st.Bytes), Unit: "Bytes"},
	); merr != nil {
		f.log().Warn("metrics", slog.String("error", merr.Error()))
	}
	return err
}

// Archive writes the events among recs, one object per (bucket, day): at
// most Buckets objects a day, however many sources the batch holds.
func (f *Function) Archive(ctx context.Context, recs []events.DynamoDBEventRecord) (Stats, error) {
	st := Stats{Records: len(recs)}
	lines, skipped, err := parse(recs)
	st.Skipped = skipped
	if err != nil || len(lines) == 0 {
		return st, err
	}
	objs, err := group(recs[0].EventID, lines)
	if err != nil {
		return st, err
	}
	if err := f.putAll(ctx, objs); err != nil {
		return st, err
	}
	st.Archived, st.Objects = len(lines), len(objs)
	for _, o := range objs {
		st.Bytes += len(o.body)
	}
	return st, nil
}

// object is one object to write.
type object struct {
	key  string
	body []byte
}

// group gathers lines by object key, in stream order within each object,
// and compresses each; the objects come sorted by key.
func group(batch string, lines []Line) ([]object, error) {
	byKey := map[string][]Line{}
	for _, l := range lines {
		k := ObjectKey(l.Source, l.day, batch)
		byKey[k] = append(byKey[k], l)
	}
	objs := make([]object, 0, len(byKey))
	for k, ls := range byKey {
		body, err := encode(ls)
		if err != nil {
			return nil, fmt.Errorf("encode %s: %w", k, err)
		}
		objs = append(objs, object{k, body})
	}
	sort.Slice(objs, func(i, j int) bool { return objs[i].key < objs[j].key })
	return objs, nil
}

// encode writes lines as gzip-compressed JSON lines.
func encode(lines []Line) ([]byte, error) {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	enc := json.NewEncoder(zw) // one object and a newline per Encode
	enc.SetEscapeHTML(false)
	for _, l := range lines {
		if err := enc.Encode(l); err != nil {
			return nil, err
		}
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// putAll writes objs, Concurrency at a time, and joins their errors.
func (f *Function) putAll(ctx context.Context, objs []object) error {
	n := f.Concurrency
	if n <= 0 {
		n = DefaultConcurrency
	}
	sem := make(chan struct{}, n)
	errs := make([]error, len(objs))
	var wg sync.WaitGroup
	for i, o := range objs {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			if err := f.Store.Put(ctx, o.key, o.body); err != nil {
				errs[i] = fmt.Errorf("put %s: %w", o.key, err)
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (f *Function) log() *slog.Logger {
	if f.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return f.Log
}
