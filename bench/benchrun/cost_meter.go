package benchrun

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"math"
	"sync"
	"time"
)

// fnMeter sums a function's invocations and billed time.
type fnMeter struct {
	invocations int
	billedMs    int64
	lines       int // its own log lines
	platform    int // bytes of Lambda's START, END and REPORT lines
}

func (m *fnMeter) add(d time.Duration, memoryMB int) {
	ms := int64(math.Ceil(float64(d) / float64(time.Millisecond)))
	m.invocations++
	m.billedMs += max(ms, 1)
	m.platform += platformLogBytes(ms, memoryMB)
}

// platformLogBytes is the size of the START, END and REPORT lines Lambda
// writes for an invocation (text log format), with CloudWatch's per-event
// overhead.
func platformLogBytes(ms int64, memoryMB int) int {
	const id = "6f1b9a52-3c1e-4d8e-9a77-0b1c2d3e4f50"
	lines := []string{
		"START RequestId: " + id + " Version: $LATEST\n",
		"END RequestId: " + id + "\n",
		fmt.Sprintf("REPORT RequestId: %s\tDuration: %d.00 ms\tBilled Duration: %d ms\tMemory Size: %d MB\tMax Memory Used: %d MB\t\n",
			id, ms, ms, memoryMB, memoryMB/8),
	}
	n := 0
	for _, l := range lines {
		n += len(l) + logEventOverhead
	}
	return n
}

// countingWriter counts the bytes and lines a function logs.
type countingWriter struct {
	mu           sync.Mutex
	bytes, lines int
}

func (w *countingWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.bytes += len(p)
	w.lines += bytes.Count(p, []byte{'\n'})
	return len(p), nil
}

func (w *countingWriter) billed() int { return w.bytes + w.lines*logEventOverhead }

// countingStore is the archive bucket: it counts the objects put.
type countingStore struct {
	mu             sync.Mutex
	objects, bytes int
}

// Put counts one object.
func (s *countingStore) Put(_ context.Context, _ string, body []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.objects++
	s.bytes += len(body)
	return nil
}

// cutter is an event source mapping cutting one shard's records into
// invocations as they arrive: a batch closes when its window has passed
// since its first record, at the end of a tumbling window, at MaxRecords,
// or when the next record would pass MaxBytes. The batch still open when
// the measurement ends is never invoked: only whole batches are counted.
type cutter[T any] struct {
	m     mapping
	cur   []T
	start time.Time
	end   time.Time
	bytes int
}

func (c *cutter[T]) add(at time.Time, rec T, size int) (done []T) {
	if len(c.cur) > 0 && (!at.Before(c.start.Add(c.m.Window)) || (c.m.Tumbling > 0 && !at.Before(c.end)) ||
		len(c.cur) == c.m.MaxRecords || c.bytes+size > c.m.MaxBytes) {
		done, c.cur, c.bytes = c.cur, nil, 0
	}
	if len(c.cur) == 0 {
		c.start = at
		if c.m.Tumbling > 0 {
			c.end = at.Truncate(c.m.Tumbling).Add(c.m.Tumbling)
		}
	}
	c.cur = append(c.cur, rec)
	c.bytes += size
	return done
}

// CostMeasured is what a workload's run measured, before scaling.
type CostMeasured struct {
	WindowSeconds    float64 `json:"window_seconds"`
	KinesisShards    int     `json:"kinesis_shards"`
	Containers       int     `json:"ingest_containers"`
	StreamShards     int     `json:"table_stream_shards"`
	Events           int     `json:"events_ingested"`
	Sent             int     `json:"events_sent"`
	CounterEvents    int     `json:"events_counted"`
	ArchiveEvents    int     `json:"events_archived"`
	Invocations      [3]int  `json:"invocations"` // ingest, counter, archive
	EventRequests    int     `json:"event_batchwriteitem_requests"`
	EventWRU         float64 `json:"event_wru"`
	GSIWRU           float64 `json:"gsi_wru"`
	EventItemBytes   int     `json:"event_item_bytes"`
	Pairs            int     `json:"container_source_pairs"`
	Sources          int     `json:"sources_written"`
	HourMarks        tally   `json:"hour_marks"`
	ShardRecords     tally   `json:"shard_records"`
	Catalogue        tally   `json:"catalogue"`
	Demand           tally   `json:"demand"`
	Counter          tally   `json:"counter"`
	Other            tally   `json:"other"`
	LogLines         [3]int  `json:"log_lines"` // the functions' own, at info
	ArchiveObjects   int     `json:"archive_objects"`
	ArchiveBytes     int     `json:"archive_bytes"`
	RawBytes         int     `json:"raw_sample_bytes"`
	GzipBytes        int     `json:"gzip_sample_bytes"`
	PutUnits         int     `json:"kinesis_put_units"`
	FirehoseBytes    int     `json:"firehose_billed_bytes"`
	MeanEventBytes   float64 `json:"mean_event_bytes"`
	BilledSeconds    [3]float64
	LogBytes         [3]int
	PlatformLogBytes [3]int
}

func (s *sim) measured() CostMeasured {
	t := s.book.tallies()
	ew := s.split.written()
	m := CostMeasured{WindowSeconds: s.w.Window.Seconds(), KinesisShards: s.kshards, Containers: len(s.handlers),
		StreamShards: s.sink.shards, Events: s.events, CounterEvents: s.counted, ArchiveEvents: s.archived, Sent: s.generated,
		EventRequests: ew.Requests, EventWRU: ew.WRU, GSIWRU: ew.GSIWRU, EventItemBytes: ew.ItemBytes + ew.GSIBytes,
		Pairs: len(s.pairs), Sources: len(s.sources),
		HourMarks: t[kindHours], ShardRecords: t[kindShards], Catalogue: t[kindCatalogue], Demand: t[kindDemand],
		Counter: t[kindCounter], Other: t[kindOther],
		ArchiveObjects: s.store.objects, ArchiveBytes: s.store.bytes, PutUnits: s.putUnits, FirehoseBytes: s.firehoseBytes}
	for i := range 3 {
		m.Invocations[i] = s.fn[i].invocations
		m.BilledSeconds[i] = float64(s.fn[i].billedMs) / 1000
		m.LogLines[i] = s.logs[i].lines
		m.LogBytes[i] = s.logs[i].billed()
		m.PlatformLogBytes[i] = s.fn[i].platform
	}
	var raw bytes.Buffer
	for _, b := range s.raw {
		raw.Write(b)
		raw.WriteByte('\n')
	}
	m.RawBytes = raw.Len()
	m.MeanEventBytes = float64(raw.Len()-len(s.raw)) / float64(max(1, len(s.raw)))
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, _ = zw.Write(raw.Bytes()) // a bytes.Buffer does not fail
	_ = zw.Close()
	m.GzipBytes = gz.Len()
	return m
}
