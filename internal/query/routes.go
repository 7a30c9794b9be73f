package query

import (
	"context"
	"crypto/sha256"
	"log/slog"
	"net/http"
	"time"

	"github.com/shardline/shardline/internal/apigw"
	"github.com/shardline/shardline/internal/catalog"
	"github.com/shardline/shardline/internal/counts"
	"github.com/shardline/shardline/internal/deadline"
	"github.com/shardline/shardline/internal/emf"
)

// Routes of the dashboards' read API, beside the events and the quarantine.
const (
	CountsRoute  = counts.Route
	SourcesRoute = catalog.Route
)

// The kinds of the dashboards' routes.
const (
	Counts  Kind = 'C'
	Sources Kind = 'S'
)

// counts answers GET /v1/counts, and tenant's counts route (tenant not
// ""), from every level of the counters (docs/counts.md): the source's
// items, and the L1 packs not yet rolled up.
func (h *Handler) counts(ctx context.Context, r apigw.Request, tenant string, start time.Time) apigw.Response {
	req, err := counts.ParseRequest(r.RawQuery, h.now())
	if err != nil {
		return apigw.Error(http.StatusBadRequest, "%s", err.Error())
	}
	if refused := h.checkSource(ctx, r, tenant, true, req.Source); refused != nil {
		return *refused
	}
	ctx, cancel := deadline.Budget(ctx)
	defer cancel()
	resp, err := counts.ReadLevels(ctx, h.reader.Client, h.reader.Table, h.buckets, req)
	h.reportRead(ctx, Counts, resp.Plan.Requests, resp.Plan.ConsumedRCU, err, start)
	if err != nil {
		return unavailable(err)
	}
	return apigw.JSON(http.StatusOK, resp)
}

// sources answers GET /v1/sources from the catalogue; on tenant's route
// (tenant not ""), only the tenant's sources, read by its prefixes, with
// cursors of its own.
func (h *Handler) sources(ctx context.Context, r apigw.Request, tenant string, start time.Time) apigw.Response {
	key := h.keys.derive("sources")
	if tenant != "" {
		key = h.keys.derive("sources\x00tenant\x00" + tenant)
	}
	req, err := catalog.ParseRequest(r.RawQuery, h.now(), key)
	if err != nil {
		return apigw.Error(http.StatusBadRequest, "%s", err.Error())
	}
	if tenant != "" {
		t, _ := h.tenants.Tenant(tenant) // route checked it
		req.Prefixes = t.Sources
	}
	ctx, cancel := deadline.Budget(ctx)
	defer cancel()
	resp, page, err := catalog.Serve(ctx, h.reader.Client, h.reader.Table, req, key)
	h.reportRead(ctx, Sources, page.Requests, page.RCU, err, start)
	if err != nil {
		return unavailable(err)
	}
	return apigw.JSON(http.StatusOK, resp)
}

// reportRead logs a dashboard read and writes its metrics.
func (h *Handler) reportRead(ctx context.Context, kind Kind, requests int, rcu float64, err error, start time.Time) {
	attrs := []slog.Attr{
		slog.String("kind", string(kind)),
		slog.Int("requests", requests),
		slog.Float64("rcu", rcu),
		slog.Duration("duration", h.now().Sub(start)),
	}
	level := slog.LevelInfo
	if err != nil {
		level = slog.LevelWarn
		attrs = append(attrs, slog.String("error", err.Error()))
	}
	_ = h.metrics.Log(ctx, h.log, level, "query", h.now(), attrs,
		emf.Metric{Name: "ReadRequests", Value: float64(requests), Unit: "Count"},
		emf.Metric{Name: "ConsumedRCU", Value: rcu, Unit: "Count"},
	)
}

// derive is a key of its own for another kind of cursor, so that no
// cursor of one route is ever valid on another.
func (k *Keys) derive(purpose string) []byte {
	h := sha256.New()
	h.Write(k.key)
	h.Write([]byte("\x00" + purpose))
	return h.Sum(nil)
}
