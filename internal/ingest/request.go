package ingest

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"strings"

	"github.com/shardline/shardline/internal/apigw"
	"github.com/shardline/shardline/internal/cloudevent"
	"github.com/shardline/shardline/internal/echo"
	"github.com/shardline/shardline/internal/tenant"
)

// checkRoute refuses anything but POST on Route or on a tenant's events
// route, told apart by the route key (apigw.Request.Route), and returns
// the tenant a tenant's route names ("" on Route). An unknown tenant is a
// 404, and a caller that is another of the stack's tenant roles a 403
// (tenant.Config.CallerMay); both are reported as refusals.
func (h *Handler) checkRoute(ctx context.Context, r apigw.Request) (string, *apigw.Response) {
	rt := r.Route()
	if !rt.Is(Route) {
		resp := apigw.Error(http.StatusNotFound, "no route %s %s; events are sent with POST %s",
			echo.Cut(r.Method, echo.MaxQuoted), echo.Cut(r.Path, echo.MaxQuoted), Route)
		return "", &resp
	}
	if rt.Tenanted {
		if _, ok := h.cfg.Tenants.Tenant(rt.Tenant); !ok {
			resp := h.refuse(ctx, r, rt.Tenant, http.StatusNotFound, fmt.Sprintf("no tenant %s: the tenants' events are sent with POST %s<tenant>/events, "+
				"for a tenant this deployment declares", echo.Quote(rt.Tenant), apigw.TenantsPath))
			return "", &resp
		}
	}
	if r.Method != http.MethodPost {
		where := Route
		if rt.Tenanted {
			where = echo.Cut(rt.Path, 2*echo.MaxQuoted)
		}
		resp := apigw.Error(http.StatusMethodNotAllowed, "method %s not allowed on %s; use POST", echo.Cut(r.Method, echo.MaxQuoted), where).
			With("Allow", http.MethodPost)
		return "", &resp
	}
	if rt.Tenanted && !h.cfg.Tenants.CallerMay(rt.Tenant, r.Caller.UserID, true) {
		resp := h.refuse(ctx, r, rt.Tenant, http.StatusForbidden, fmt.Sprintf("caller %s is not tenant %s's writer role; "+
			"send tenant %s's events as its writer role", echo.Quote(r.Caller.ARN), rt.Tenant, rt.Tenant))
		return "", &resp
	}
	return rt.Tenant, nil
}

// checkSources refuses, with a 403 naming the first, a request to
// tenant's route holding an event whose source is not the tenant's: a
// valid event's, or an invalid one's when its source can be read. Nothing
// of the request is then stored or quarantined.
func (h *Handler) checkSources(ctx context.Context, r apigw.Request, name string, p parsed) *apigw.Response {
	for _, u := range p.units {
		src, ok := "", false
		if u.event != nil {
			src, ok = u.event.Source, true
		} else if u.rejected != nil {
			src, ok = rawSource(u.rejected.Raw)
		}
		if ok && !h.cfg.Tenants.Owns(name, src) {
			resp := h.refuse(ctx, r, name, http.StatusForbidden, tenant.NotOwned(name, src))
			return &resp
		}
	}
	return nil
}

// rawSource reads the source of an event that could not be parsed whole,
// when it has one as a string.
func rawSource(raw []byte) (string, bool) {
	var probe struct {
		Source *string `json:"source"`
	}
	if json.Unmarshal(raw, &probe) != nil || probe.Source == nil {
		return "", false
	}
	return *probe.Source, true
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

// mode is how a request carries its events (CloudEvents HTTP protocol
// binding, section 3).
type mode int

const (
	structured mode = iota // one event, or a JSON array of them, in the body
	batched                // application/cloudevents-batch+json: an array
	binary                 // one event: attributes in ce-* headers, data in the body
)

// contentMode tells the mode from the Content-Type, as the HTTP protocol
// binding does: a CloudEvents format is structured or batched; a request
// with a ce-specversion header is otherwise in binary mode, whatever its
// data's media type; and a plain JSON body (or none said) is taken as
// structured.
func contentMode(r apigw.Request) (mode, *apigw.Response) {
	ct := r.Header("Content-Type")
	mt := ""
	if ct != "" {
		var err error
		if mt, _, err = mime.ParseMediaType(ct); err != nil {
			resp := apigw.Error(http.StatusUnsupportedMediaType, "Content-Type %s cannot be parsed: %v", echo.Quote(ct), err)
			return structured, &resp
		}
	}
	switch {
	case mt == "application/cloudevents-batch+json":
		return batched, nil
	case mt == "application/cloudevents+json":
		return structured, nil
	case strings.HasPrefix(mt, "application/cloudevents"):
		resp := apigw.Error(http.StatusUnsupportedMediaType, "Content-Type %s is a CloudEvents format this API does not read; send JSON "+
			"(application/cloudevents+json or application/cloudevents-batch+json)", echo.Quote(mt))
		return structured, &resp
	case r.Header("ce-specversion") != "":
		return binary, nil
	case mt == "" || mt == "application/json":
		return structured, nil
	}
	resp := apigw.Error(http.StatusUnsupportedMediaType,
		"Content-Type %s is not supported without ce-* headers; send application/json, application/cloudevents+json or "+
			"application/cloudevents-batch+json, or the event in binary mode (attributes in ce-* headers, ce-specversion among them)", echo.Quote(mt))
	return structured, &resp
}

// requestBody is the request's body, decoded from base64 if API Gateway
// encoded it. An oversized body is refused before it is copied or decoded.
func requestBody(r apigw.Request) ([]byte, *apigw.Response) {
	size := len(r.Body)
	if r.Base64 {
		size = base64.StdEncoding.DecodedLen(len(r.Body))
	}
	if size > MaxRequestBytes+2 || (!r.Base64 && size > MaxRequestBytes) {
		return nil, tooLarge(size)
	}
	if !r.Base64 {
		return []byte(r.Body), nil
	}
	body, err := base64.StdEncoding.DecodeString(r.Body)
	if err != nil {
		resp := apigw.Error(http.StatusBadRequest, "body: marked base64-encoded but is not valid base64: %v", err)
		return nil, &resp
	}
	if len(body) > MaxRequestBytes {
		return nil, tooLarge(len(body))
	}
	return body, nil
}

func tooLarge(size int) *apigw.Response {
	resp := apigw.Error(http.StatusRequestEntityTooLarge, "body: %d bytes is over the %d-byte limit; split it into several requests", size, MaxRequestBytes)
	return &resp
}

// parseEvents splits the body into events, under the request's rules (a
// batch is an array; an empty or too long one is answered, not
// quarantined), and reads them (reader.part). A body that is unusable as
// a whole is quarantined as one record.
func (h *Handler) parseEvents(body []byte, batch bool, req apiRequest) (parsed, *apigw.Response) {
	raws, array, err := cloudevent.Split(body)
	if err == nil && batch && !array {
		err = &cloudevent.FieldError{Field: "body", Problem: "a CloudEvents batch must be a JSON array"}
	}
	if err != nil {
		return parsed{
			units:      []unit{rejectedUnit(0, body, err.Error(), req.origin, req.received)},
			rejections: []Rejection{{Index: 0, Error: err.Error()}},
		}, nil
	}
	if len(raws) == 0 {
		// An empty CloudEvents batch is valid (JSON format 1.0.2, 4): it
		// asks nothing. An empty array as plain JSON is more likely a
		// producer's mistake, and is refused.
		resp := apigw.JSON(http.StatusAccepted, Response{Rejected: []Rejection{}})
		if !batch {
			resp = apigw.JSON(http.StatusBadRequest, Response{Rejected: []Rejection{}, Error: "body: holds no events"})
		}
		return parsed{}, &resp
	}
	if len(raws) > MaxRequestEvents {
		resp := apigw.Error(http.StatusRequestEntityTooLarge, "body: %d events is over the limit of %d per request; split it", len(raws), MaxRequestEvents)
		return parsed{}, &resp
	}
	// The reader does not check a tenant's events: the route refuses the
	// request whole (checkSources).
	r := h.newReader(req.now, len(raws), false)
	var p parsed
	p.units = r.part(make([]unit, 0, len(raws)), &record{origin: req.origin, received: req.received}, part{data: body, raws: raws, array: array})
	for n := range p.units {
		u := &p.units[n]
		if u.origin.Index != nil {
			u.group = *u.origin.Index // a request's events are reported by their index
		}
		if u.rejected != nil {
			p.rejections = append(p.rejections, Rejection{Index: u.group, ID: idOf(u.rejected.Raw), Error: u.rejected.Reason})
		}
	}
	return p, nil
}
