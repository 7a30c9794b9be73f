// Package ingest is the ingest function: it takes Kinesis batches and API
// Gateway requests, validates the CloudEvents in them, writes them to the
// events table under shardline's keys, and quarantines what it cannot
// ingest.
package ingest

import (
	"context"
	"encoding/json"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/shardline/shardline/internal/adapt"
	"github.com/shardline/shardline/internal/apigw"
	"github.com/shardline/shardline/internal/catalog"
	"github.com/shardline/shardline/internal/cloudevent"
	"github.com/shardline/shardline/internal/deadline"
	"github.com/shardline/shardline/internal/emf"
	"github.com/shardline/shardline/internal/pace"
	"github.com/shardline/shardline/internal/shardmap"
	"github.com/shardline/shardline/internal/writer"
)

// FunctionName names the ingest function in its logs and in its metrics'
// Function dimension, which the stack's alarms select on.
const FunctionName = "ingest"

// Client is the part of the DynamoDB client the ingest function uses.
type Client interface {
	writer.API
	shardmap.API
	shardmap.HoursAPI
}

var _ Client = (*dynamodb.Client)(nil)

// Handler serves ingest invocations. Build one per container with New; it
// is safe for concurrent use.
type Handler struct {
	cfg         Config
	registry    *shardmap.Registry
	hours       *shardmap.Hours
	writer      *writer.Writer
	log         *slog.Logger
	metrics     *emf.Logger
	now         func() time.Time
	policy      *adapt.Policy // nil when adaptive sharding is off
	demand      *shardmap.Demand
	writerID    string       // this container, in its demand reports
	forgot      atomic.Int64 // Unix second the policy last forgot idle sources
	redelivered redeliveries // Kinesis records stored after a failed one
	// apiBudget bounds the work of an API request (deadline.API).
	apiBudget time.Duration
}

// Options are the parts of a Handler that tests and the local server vary.
type Options struct {
	Logger  *slog.Logger     // default: discard
	Metrics *emf.Logger      // default: none
	Now     func() time.Time // default: time.Now
	// APIBudget bounds the work of an API request, counted from when API
	// Gateway received it. Default, and most: deadline.API.
	APIBudget time.Duration
	// Policy decides adaptive sharding's raises. Default: the defaults,
	// bounded by Config.ShardsMax; ignored when that is 0. Its KeyWCU is
	// also the ceiling the writer paces throttled keys against.
	Policy *adapt.Policy
	// Pacer paces the keys DynamoDB throttles. Default: one on the wall
	// clock, against the Policy's KeyWCU. A test whose partition model
	// runs on a fast clock gives it that clock.
	Pacer *pace.Pacer
	// Sleep waits d of the Pacer's clock, or fails at once when ctx would
	// end first. Default: backoff.SleepWithin. A test whose clock runs
	// fast scales d to the wall clock here.
	Sleep func(ctx context.Context, d time.Duration) error
}

// New returns a Handler writing through client.
func New(cfg Config, client Client, o Options) *Handler {
	h := &Handler{cfg: cfg, log: o.Logger, metrics: o.Metrics, now: o.Now}
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	if h.now == nil {
		h.now = time.Now
	}
	h.apiBudget = deadline.API
	if o.APIBudget > 0 && o.APIBudget < deadline.API {
		h.apiBudget = o.APIBudget
	}
	h.registry = &shardmap.Registry{
		Client: client,
		Table:  cfg.Table,
		Now:    h.now,
		Config: shardmap.Config{
			Shards:     cfg.Shards,
			GSIShards:  cfg.GSIShards,
			Quarantine: cfg.QuarantineShards,
			Retention:  cfg.Retention,
			Carry:      cfg.ShardsMax > 0,
			Copies:     cfg.GSICopies,
		},
		// A source's new day is listed in the day's catalogue before its
		// shard record is created (docs/keys.md, catalogue).
		NewDay: catalog.Lister(client, cfg.Table),
	}
	if cfg.ShardsMax > 0 {
		h.policy = o.Policy
		if h.policy == nil {
			h.policy = &adapt.Policy{}
		}
		h.policy.Max = cfg.ShardsMax
	}
	h.hours = &shardmap.Hours{Client: client, Table: cfg.Table, Retention: cfg.Retention}
	h.demand = &shardmap.Demand{Client: client, Table: cfg.Table, Retention: cfg.Retention}
	if h.policy != nil {
		h.demand.Fresh = 2 * h.policy.WindowOrDefault()
	}
	h.writerID = strconv.FormatUint(rand.Uint64(), 36)
	pacer := o.Pacer
	if pacer == nil {
		pacer = &pace.Pacer{}
		if o.Policy != nil {
			pacer.KeyWCU = o.Policy.KeyWCU
		}
	}
	if pacer.Family == nil {
		pacer.Family = shardFamily
	}
	h.writer = &writer.Writer{Client: client, Table: cfg.Table, Concurrency: cfg.WriteConcurrency,
		Pacer: pacer, Sleep: o.Sleep}
	return h
}

func (h *Handler) limits() cloudevent.Limits {
	return cloudevent.Limits{MaxBytes: h.cfg.MaxEventBytes, Retention: h.cfg.Retention}
}

// Invoke is the Lambda entry point: it recognises a Kinesis event, an API
// Gateway HTTP API (v2) request or a REST API (v1) proxy request and answers
// each in kind.
func (h *Handler) Invoke(ctx context.Context, payload json.RawMessage) (any, error) {
	return apigw.Handlers{Kinesis: h.Kinesis, HTTP: h.HTTP, REST: h.REST}.Invoke(ctx, FunctionName, payload)
}

// report logs an invocation's outcome and writes its metrics.
func (h *Handler) report(ctx context.Context, kind string, accepted, rejected, failed int, st storeStats, start time.Time) {
	level := slog.LevelInfo
	attrs := []slog.Attr{
		slog.String("source", kind),
		slog.Int("accepted", accepted),
		slog.Int("rejected", rejected),
		slog.Int("failed", failed),
		slog.Int("retried", st.retried),
		slog.Int("already_stored", st.alreadyStored),
		slog.Int("requests", st.requests),
		slog.Float64("wcu", st.wcu),
		slog.Duration("duration", h.now().Sub(start)),
	}
	if failed > 0 {
		level = slog.LevelWarn
		if st.firstErr != nil {
			attrs = append(attrs, slog.String("error", st.firstErr.Error()))
		}
	}
	if err := h.metrics.Log(ctx, h.log, level, "ingest", h.now(), attrs,
		emf.Metric{Name: "Accepted", Value: float64(accepted), Unit: "Count"},
		emf.Metric{Name: "Rejected", Value: float64(rejected), Unit: "Count"},
		emf.Metric{Name: "Retried", Value: float64(st.retried), Unit: "Count"},
		emf.Metric{Name: "Failed", Value: float64(failed), Unit: "Count"},
		emf.Metric{Name: "WriteRequests", Value: float64(st.requests), Unit: "Count"},
		emf.Metric{Name: "ConsumedWCU", Value: st.wcu, Unit: "Count"},
	); err != nil {
		h.log.Warn("metrics", slog.String("error", err.Error()))
	}
}

// shardFamily is a partition key without its shard: the keys of one
// index of one source on one day (the table) or hour (the GSI), which a
// pacer paces alike (pace.Pacer.Family).
func shardFamily(key string) string {
	if i := strings.LastIndexByte(key, '#'); i >= 0 {
		return key[:i]
	}
	return key
}
