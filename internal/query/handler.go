package query

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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
	"github.com/shardline/shardline/internal/tenant"
)

// FunctionName names the query function in its logs and in its metrics'
// Function dimension, which the stack's alarms select on.
const FunctionName = "query"

// Routes the query API serves.
const (
	EventsRoute     = "/v1/events"
	QuarantineRoute = "/v1/quarantine"
)

// RetryAfterSeconds is the Retry-After of a 503 answer.
const RetryAfterSeconds = 1

// Handler serves the query API. Build one per container with New.
type Handler struct {
	tenants *tenant.Config
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
	h := &Handler{tenants: cfg.Tenants, log: o.Logger, metrics: o.Metrics, now: o.Now, keys: NewKeys(cfg.CursorSecret, cfg.Table), buckets: cfg.CountBuckets}
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
	return apigw.Handlers{HTTP: h.HTTP, REST: h.REST}.Invoke(ctx, FunctionName, payload)
}

func (h *Handler) serve(ctx context.Context, r apigw.Request) apigw.Response {
	start := h.now()
	kind, name, refused := h.route(ctx, r)
	if refused != nil {
		return *refused
	}
	switch kind {
	case Counts:
		return h.counts(ctx, r, name, start)
	case Sources:
		return h.sources(ctx, r, name, start)
	}
	p, err := parseParams(kind, name, r.RawQuery, h.now(), h.keys)
	if err != nil {
		return apigw.Error(http.StatusBadRequest, "%s", err.Error())
	}
	if refused := h.checkSource(ctx, r, name, kind == Events, p.Source); refused != nil {
		return *refused
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

// route is what r asks for, told by its route key (apigw.Request.Route),
// and the tenant a tenant's route names ("" on the /v1/... routes), or
// the answer refusing it: an unknown tenant is a 404, and a caller that
// is another of the stack's tenant roles a 403 (tenant.Config.CallerMay),
// both reported as refusals.
func (h *Handler) route(ctx context.Context, r apigw.Request) (Kind, string, *apigw.Response) {
	rt := r.Route()
	var kind Kind
	switch {
	case rt.Is(EventsRoute):
		kind = Events
	case rt.Is(QuarantineRoute):
		kind = Quarantine
	case rt.Is(CountsRoute):
		kind = Counts
	case rt.Is(SourcesRoute):
		kind = Sources
	default:
		resp := apigw.Error(http.StatusNotFound, "no route %s %s; the query API serves GET %s, %s, %s and %s",
			echo.Cut(r.Method, echo.MaxQuoted), echo.Cut(strings.TrimRight(r.Path, "/"), echo.MaxQuoted), EventsRoute, QuarantineRoute, CountsRoute, SourcesRoute)
		return 0, "", &resp
	}
	if rt.Tenanted {
		if _, ok := h.tenants.Tenant(rt.Tenant); !ok {
			resp := h.refuse(ctx, r, rt.Tenant, http.StatusNotFound, fmt.Sprintf("no tenant %s: a tenant's reads are GET %s<tenant>/events, /counts, "+
				"/sources and /quarantine, for a tenant this deployment declares", echo.Quote(rt.Tenant), apigw.TenantsPath))
			return 0, "", &resp
		}
	}
	if r.Method != http.MethodGet {
		resp := apigw.Error(http.StatusMethodNotAllowed, "method %s not allowed here; use GET", echo.Cut(r.Method, echo.MaxQuoted)).
			With("Allow", http.MethodGet)
		return 0, "", &resp
	}
	if rt.Tenanted && !h.tenants.CallerMay(rt.Tenant, r.Caller.UserID, false) {
		resp := h.refuse(ctx, r, rt.Tenant, http.StatusForbidden, fmt.Sprintf("caller %s is not tenant %s's reader role; "+
			"read tenant %s's routes as its reader role", echo.Quote(r.Caller.ARN), rt.Tenant, rt.Tenant))
		return 0, "", &resp
	}
	return kind, rt.Tenant, nil
}

// checkSource refuses, with a 403, a read on tenant's route naming a
// source that is not the tenant's (has says the read names one).
func (h *Handler) checkSource(ctx context.Context, r apigw.Request, name string, has bool, source string) *apigw.Response {
	if name == "" || !has || h.tenants.Owns(name, source) {
		return nil
	}
	resp := h.refuse(ctx, r, name, http.StatusForbidden, tenant.NotOwned(name, source))
	return &resp
}

// refuse reports a refusal of a tenant's request (tenant.Report) and is
// its answer, status with msg.
func (h *Handler) refuse(ctx context.Context, r apigw.Request, name string, status int, msg string) apigw.Response {
	route := r.RouteKey
	if route == "" {
		route = r.Method + " " + r.Path
	}
	tenant.Report(ctx, h.log, h.metrics, h.now(), tenant.Refusal{Tenant: name, Route: route, Caller: r.Caller.ARN, Reason: msg})
	return apigw.Error(status, "%s", msg)
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
