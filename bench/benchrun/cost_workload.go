package benchrun

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"time"

	"github.com/shardline/shardline/internal/shardmap"
)

// The cost model's workloads: who sends how many events, at what rate,
// and the arrivals that makes.

// SourceGroup is Count sources that each send Rate events a second.
type SourceGroup struct {
	Prefix string  `json:"prefix"` // the source's name, or its names' prefix when Count > 1
	Count  int     `json:"count"`
	Rate   float64 `json:"events_per_second_each"`
	// Shards and GSIShards, when not 0, are the group's raised shard
	// counts (SHARDS_OVERRIDES, GSI_SHARDS_OVERRIDES).
	Shards    int `json:"shards,omitempty"`
	GSIShards int `json:"gsi_shards,omitempty"`
}

func (g SourceGroup) name(i int) string {
	if g.Count == 1 {
		return g.Prefix
	}
	return fmt.Sprintf("%s%05d", g.Prefix, i)
}

// CostWorkload is one reference workload of the cost model.
type CostWorkload struct {
	Name   string        `json:"name"`
	Groups []SourceGroup `json:"groups"`
	// Window is the simulated time measured, from a UTC midnight: the
	// events of that long, at the workload's rates, go through the real
	// handlers; the results are scaled to a million events.
	Window time.Duration `json:"window_ns"`
	// GSICopies is the ingest function's GSI_COPIES; empty is "always".
	GSICopies shardmap.Copies `json:"gsi_copies,omitempty"`
	// QuietYesterday: every source of a group at under QuietRate events
	// a second had a quiet previous day, as a steady state has it: the
	// run first writes each one's previous shard record and hour index
	// (seedYesterday), unbilled, as yesterday's writers left them.
	QuietYesterday bool `json:"quiet_yesterday,omitempty"`
}

// QuietRate is the rate under which a source's previous day is seeded as
// quiet (CostWorkload.QuietYesterday): one event a second over four
// containers puts at most one or two in an hour's first 1 s batch, far
// under shardmap.QuietHour.
const QuietRate = 1.0

// Rate is the workload's events a second.
func (w CostWorkload) Rate() float64 {
	var r float64
	for _, g := range w.Groups {
		r += float64(g.Count) * g.Rate
	}
	return r
}

// Sources is the workload's number of sources.
func (w CostWorkload) Sources() int {
	n := 0
	for _, g := range w.Groups {
		n += g.Count
	}
	return n
}

// DefaultCostWorkloads are issue 22's three reference workloads.
var DefaultCostWorkloads = []CostWorkload{
	{Name: "steady: one source, 1,000 events/s", Window: 40 * time.Second,
		Groups: []SourceGroup{{Prefix: "plant/line-1", Count: 1, Rate: 1000}}},
	{Name: "many: 10,000 sources at 0.1 events/s", Window: 20 * time.Second,
		Groups: []SourceGroup{{Prefix: "device/", Count: 10000, Rate: 0.1}}},
	{Name: "hot: one source at 20,000 events/s beside 1,000 quiet ones", Window: 16 * time.Second,
		Groups: []SourceGroup{{Prefix: "fleet/hot", Count: 1, Rate: 20000, Shards: 32, GSIShards: 32},
			{Prefix: "device/", Count: 1000, Rate: 0.1}}},
	// 40 s, not 20: without the GSI key a stream record is smaller, and
	// 20 s of them no longer fill an archive batch's 6 MB on any stream
	// shard.
	{Name: "many, GSI_COPIES=where-it-pays, each source's previous day quiet", Window: 40 * time.Second,
		Groups:    []SourceGroup{{Prefix: "device/", Count: 10000, Rate: 0.1}},
		GSICopies: shardmap.CopiesWhereItPays, QuietYesterday: true},
}

// The stack's settings the cost model mirrors (infra/shardline: props.go,
// functions.go, counter.go, archive.go), which this package does not
// import: the CDK libraries do not belong in the command line.
const (
	ingestMemoryMB     = 512
	counterMemoryMB    = 256
	archiveMemoryMB    = 256
	queryMemoryMB      = 256
	ingestParallel     = 2   // ParallelizationFactor: concurrent batches per Kinesis shard
	kinesisFill        = 0.8 // the share of a shard's 1,000 records/s or 1 MB/s a stream is sized to
	partitionWCU       = 1000
	minStreamShards    = 4
	retentionDays      = 30
	hoursPerMonth      = 730
	firehoseBufferSize = 5 << 20 // Firehose's default S3 buffering hints: 5 MB or 300 s
	firehoseBufferTime = 300 * time.Second
)

// The event source mappings of the ingest and archive functions.
var (
	ingestMapping  = mapping{Window: time.Second, MaxRecords: 500, MaxBytes: 6 << 20}
	archiveMapping = mapping{Window: 300 * time.Second, MaxRecords: 10000, MaxBytes: 6 << 20}
)

// sent is one event a producer sends.
type sent struct {
	source int // index into names
	at     time.Time
}

// arrivals are the workload's events over its window, in time order:
// each source sends at its rate, from a random phase.
func (w CostWorkload) arrivals(start time.Time, rng *rand.Rand) ([]sent, []string) {
	var out []sent
	var names []string
	for _, g := range w.Groups {
		step := time.Duration(float64(time.Second) / g.Rate)
		for i := range g.Count {
			idx := len(names)
			names = append(names, g.name(i))
			for at := time.Duration(rng.Int64N(int64(step))); at < w.Window; at += step {
				out = append(out, sent{idx, start.Add(at)})
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].at.Before(out[j].at) })
	return out, names
}
