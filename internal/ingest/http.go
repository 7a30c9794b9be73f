package ingest

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/shardline/shardline/internal/apigw"
	"github.com/shardline/shardline/internal/deadline"
	"github.com/shardline/shardline/internal/item"
)

// Limits of one POST /v1/events request.
const (
	MaxRequestEvents = 1000
	MaxRequestBytes  = 6 << 20
)

// Route is the path the ingest API serves.
const Route = "/v1/events"

// RetryAfterSeconds is the Retry-After a 503 answer carries.
const RetryAfterSeconds = 1

// Response is the body of an answer to POST /v1/events: 202 or 400 with
// Accepted and Rejected, 503 with all three.
type Response struct {
	Accepted int         `json:"accepted"`
	Rejected []Rejection `json:"rejected"`
	// Retry lists the events that were not stored for now (storage
	// unavailable, or the request's time ran out): send them again.
	Retry []Rejection `json:"retry,omitempty"`
	// ReasonsOmitted is how many of Rejected are listed by index alone,
	// without their id and reason, to keep the answer bounded
	// (RejectedDetailBytes).
	ReasonsOmitted int    `json:"reasons_omitted,omitempty"`
	Error          string `json:"error,omitempty"`
}

// Rejection says why the event at Index was not accepted (or, in Retry, not
// stored yet). ID is its id, when it had one.
type Rejection struct {
	Index int    `json:"index"`
	ID    string `json:"id,omitempty"`
	Error string `json:"error"`
}

// HTTP serves an API Gateway HTTP API (payload format 2.0) request.
func (h *Handler) HTTP(ctx context.Context, req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	return h.api(ctx, apigw.FromHTTP(req)).HTTP(), nil
}

// REST serves an API Gateway REST API proxy (payload format 1.0) request.
func (h *Handler) REST(ctx context.Context, req events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, error) {
	return h.api(ctx, apigw.FromREST(req)).REST(), nil
}

// apiRequest is what the steps of one POST /v1/events share.
type apiRequest struct {
	now      time.Time   // the validation clock
	received time.Time   // when API Gateway received it: the time of events without one
	origin   item.Origin // the request, for the quarantine
}

// parsed is a request's events, read: the units to store and the events
// refused so far.
type parsed struct {
	units      []unit
	rejections []Rejection
}

// api serves POST /v1/events and a tenant's POST route: it checks the
// route, the media type and the body, reads the events (on a tenant's
// route, refusing the request whole if one is not the tenant's), stores
// them and answers.
func (h *Handler) api(ctx context.Context, r apigw.Request) apigw.Response {
	start := h.now()
	name, refused := h.checkRoute(ctx, r)
	if refused != nil {
		return *refused
	}
	mode, refused := contentMode(r)
	if refused != nil {
		return *refused
	}
	if refused := checkPayload(r); refused != nil {
		return *refused
	}
	body, refused := requestBody(r)
	if refused != nil {
		return *refused
	}
	req := h.newAPIRequest(r)
	req.origin.Tenant = name
	var p parsed
	if mode == binary {
		p = h.parseBinary(r.Headers, body, req)
	} else if p, refused = h.parseEvents(body, mode == batched, req); refused != nil {
		return *refused
	}
	if name != "" {
		if refused := h.checkSources(ctx, r, name, p); refused != nil {
			return *refused
		}
	}
	// API Gateway stops waiting APILimit after it received the request,
	// however long the function may run: stop writing before then.
	ctx, cancel := deadline.Within(ctx, deadline.APILeft(h.apiBudget, req.now.Sub(req.received)))
	defer cancel()
	outcomes, st := h.store(ctx, p.units, false)
	return h.answer(ctx, p, outcomes, st, start)
}

// newAPIRequest reads the request's clocks and origin.
func (h *Handler) newAPIRequest(r apigw.Request) apiRequest {
	req := apiRequest{now: h.now(), received: r.Received, origin: item.Origin{RequestID: r.RequestID}}
	if req.received.IsZero() {
		req.received = req.now.UTC()
	}
	if req.origin.RequestID == "" {
		req.origin.RequestID = fmt.Sprintf("local-%d", req.now.UnixNano())
	}
	return req
}

// answer reports what became of the request's events: 503 with Retry-After
// when any could not be stored for now, listing them; else 202 if at least
// one was accepted; else 400. ctx is the work's: done if its time ran out.
func (h *Handler) answer(ctx context.Context, p parsed, outcomes []outcome, st storeStats, start time.Time) apigw.Response {
	t := tally(outcomes)
	rejections := p.rejections
	// Events DynamoDB refused were quarantined by store: report them too.
	for n, u := range p.units {
		if u.event == nil && outcomes[n] == quarantined && !rejectedAt(rejections, u.group) {
			rejections = append(rejections, Rejection{Index: u.group, Error: u.rejected.Reason})
		}
	}
	if rejections == nil {
		rejections = []Rejection{}
	}
	h.report(ctx, "api", t.stored, t.quarantined, t.failed, st, start)
	out := Response{Accepted: t.stored}
	out.Rejected, out.ReasonsOmitted = boundRejections(rejections)
	switch {
	case t.failed > 0:
		out.Retry, out.Error = unstored(ctx, p.units, outcomes)
		return apigw.JSON(http.StatusServiceUnavailable, out).With("Retry-After", fmt.Sprint(RetryAfterSeconds))
	case t.stored == 0:
		return apigw.JSON(http.StatusBadRequest, out)
	}
	return apigw.JSON(http.StatusAccepted, out)
}

// counts are how many units had each outcome.
type counts struct{ stored, quarantined, failed int }

func tally(outcomes []outcome) counts {
	var c counts
	for _, o := range outcomes {
		switch o {
		case stored:
			c.stored++
		case quarantined:
			c.quarantined++
		default:
			c.failed++
		}
	}
	return c
}

// unstored lists the units that failed, one entry per event, and says why
// in one message: the request's time ran out, or storage was unavailable.
func unstored(ctx context.Context, units []unit, outcomes []outcome) ([]Rejection, string) {
	why := "storage is unavailable"
	if ctx.Err() != nil {
		why = fmt.Sprintf("the request ran out of time (API Gateway waits %v)", deadline.APILimit)
	}
	var retry []Rejection
	for n, u := range units {
		if outcomes[n] != failed || (len(retry) > 0 && retry[len(retry)-1].Index == u.group) {
			continue
		}
		r := Rejection{Index: u.group, Error: "not stored: " + why + "; send it again"}
		if u.event != nil {
			r.ID = u.event.ID
		}
		retry = append(retry, r)
	}
	return retry, fmt.Sprintf("%s: %d of %d events were not stored; send those in \"retry\" again "+
		"(sending the same request again is safe too)", why, len(retry), len(units))
}

func rejectedAt(rs []Rejection, index int) bool {
	for _, r := range rs {
		if r.Index == index {
			return true
		}
	}
	return false
}
