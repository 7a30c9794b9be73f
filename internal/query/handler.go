package query

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/shardline/shardline/internal/apigw"
	"github.com/shardline/shardline/internal/deadline"
	"github.com/shardline/shardline/internal/echo"
	"github.com/shardline/shardline/internal/emf"
	"github.com/shardline/shardline/internal/schema"
)

// Routes the query API serves.
const (
	EventsRoute     = "/v1/events"
	QuarantineRoute = "/v1/quarantine"
)

// RetryAfterSeconds is the Retry-After of a 503 answer.
const RetryAfterSeconds = 1

// Handler serves the query API. Build one per container with New.
type Handler struct {
	reader  *Reader
	keys    *Keys
	log     *slog.Logger
	metrics *emf.Logger
	now     func() time.Time
	buckets int // the counters' L1 buckets (Config.CountBuckets)
}

// Options are the parts of a Handler that tests and the local server vary.
type Options struct {
	Logger  *slog.Logger
	Metrics *emf.Logger
	Now     func() time.Time
	// Path, PathGSI or PathScatter, serves every eventually consistent
	// page from that path; empty (the default) takes the cheaper one.
	Path string
}

// New returns a Handler reading through client.
func New(cfg Config, client Client, o Options) *Handler {
	h := &Handler{log: o.Logger, metrics: o.Metrics, now: o.Now, keys: NewKeys(cfg.CursorSecret, cfg.Table), buckets: cfg.CountBuckets}
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	if h.now == nil {
		h.now = time.Now
	}
	h.reader = &Reader{Client: client, Table: cfg.Table, Concurrency: cfg.Concurrency, Now: h.now, Path: o.Path}
	return h
}

// HTTP serves an API Gateway HTTP API (payload format 2.0) request.
func (h *Handler) HTTP(ctx context.Context, req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	return h.serve(ctx, apigw.FromHTTP(req)).HTTP(), nil
}

// REST serves an API Gateway REST API proxy (payload format 1.0) request.
func (h *Handler) REST(ctx context.Context, req events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, error) {
	return h.serve(ctx, apigw.FromREST(req)).REST(), nil
}

// Invoke is the Lambda entry point: an HTTP API (v2) or REST API (v1)
// request.
func (h *Handler) Invoke(ctx context.Context, payload json.RawMessage) (any, error) {
	return apigw.Handlers{HTTP: h.HTTP, REST: h.REST}.Invoke(ctx, "query", payload)
}

func (h *Handler) serve(ctx context.Context, r apigw.Request) apigw.Response {
	start := h.now()
	kind, refused := route(r)
	if refused != nil {
		return *refused
	}
	switch kind {
	case Counts:
		return h.counts(ctx, r, start)
	case Sources:
		return h.sources(ctx, r, start)
	}
	p, err := ParseParams(kind, r.RawQuery, h.now(), h.keys)
	if err != nil {
		return apigw.Error(http.StatusBadRequest, "%s", err.Error())
	}
	ctx, cancel := deadline.Budget(ctx)
	defer cancel()
	var page Page
	if kind == Events {
		page, err = h.reader.Events(ctx, p)
	} else {
		page, err = h.reader.Quarantine(ctx, p)
	}
	h.report(ctx, kind, p, page, err, start)
	if err != nil {
		return unavailable(err)
	}
	return h.answer(kind, page)
}

// route is what r asks for, or the answer refusing it.
func route(r apigw.Request) (Kind, *apigw.Response) {
	path := strings.TrimRight(r.Path, "/")
	var kind Kind
	switch {
	case strings.HasSuffix(path, EventsRoute):
		kind = Events
	case strings.HasSuffix(path, QuarantineRoute):
		kind = Quarantine
	case strings.HasSuffix(path, CountsRoute):
		kind = Counts
	case strings.HasSuffix(path, SourcesRoute):
		kind = Sources
	default:
		resp := apigw.Error(http.StatusNotFound, "no route %s %s; the query API serves GET %s, %s, %s and %s",
			echo.Cut(r.Method, echo.MaxQuoted), echo.Cut(path, echo.MaxQuoted), EventsRoute, QuarantineRoute, CountsRoute, SourcesRoute)
		return 0, &resp
	}
	if r.Method != http.MethodGet {
		resp := apigw.Error(http.StatusMethodNotAllowed, "method %s not allowed here; use GET", echo.Cut(r.Method, echo.MaxQuoted)).
			With("Allow", http.MethodGet)
		return 0, &resp
	}
	return kind, nil
}

// unavailable is the 503 of a page that could not be read.
func unavailable(err error) apigw.Response {
	msg := "storage is unavailable; retry shortly"
	if errors.Is(err, ErrDeadline) {
		msg = "the query did not finish in time; narrow the range or the filters, or retry"
	}
	return apigw.Error(http.StatusServiceUnavailable, "%s", msg).With("Retry-After", strconv.Itoa(RetryAfterSeconds))
}

// answer is the 200 of a page: its events or records, the cursor of the
// next, and the plan. The reader cut the page to fit the payload limit by
// the sizes in size.go, which count these very encodings.
func (h *Handler) answer(kind Kind, page Page) apigw.Response {
	var cursor string
	if page.Next != nil {
		cursor = h.keys.Encode(page.Next)
	}
	if kind == Quarantine {
		r := QuarantineResponse{Records: make([]Record, 0, len(page.Items)), NextCursor: cursor, Plan: page.Plan}
		for _, it := range page.Items {
			r.Records = append(r.Records, record(it))
		}
		return apigw.JSON(http.StatusOK, r)
	}
	out := EventsResponse{Events: make([]json.RawMessage, 0, len(page.Items)), NextCursor: cursor, Plan: page.Plan}
	for _, it := range page.Items {
		out.Events = append(out.Events, json.RawMessage(schema.S(it[schema.Event])))
	}
	return apigw.JSON(http.StatusOK, out)
}

func (h *Handler) report(ctx context.Context, kind Kind, p Params, page Page, err error, start time.Time) {
	attrs := []slog.Attr{
		slog.String("kind", string(kind)),
		slog.String("path", page.Plan.Path),
		slog.Int("events", len(page.Items)),
		slog.Bool("stopped", page.Stopped), // by its deadline, short, with a cursor
		slog.Int("requests", page.Plan.Requests),
		slog.Float64("rcu", page.Plan.ConsumedRCU),
		slog.Duration("duration", h.now().Sub(start)),
	}
	level := slog.LevelInfo
	if err != nil {
		level = slog.LevelWarn
		attrs = append(attrs, slog.String("error", err.Error()))
	}
	fallback := 0.0
	if !p.Consistent && page.Plan.Path == PathScatter && kind == Events {
		fallback = 1
	}
	_ = h.metrics.Log(ctx, h.log, level, "query", h.now(), attrs,
		emf.Metric{Name: "Pages", Value: 1, Unit: "Count"},
		emf.Metric{Name: "ReadRequests", Value: float64(page.Plan.Requests), Unit: "Count"},
		emf.Metric{Name: "ConsumedRCU", Value: page.Plan.ConsumedRCU, Unit: "Count"},
		emf.Metric{Name: "GSIFallbacks", Value: fallback, Unit: "Count"},
	)
}
