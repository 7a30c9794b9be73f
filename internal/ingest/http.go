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

// Response is the body of a 202 or 400 answer to POST /v1/events.
type Response struct {
	Accepted int         `json:"accepted"`
	Rejected []Rejection `json:"rejected"`
	Error    string      `json:"error,omitempty"`
}

// Rejection says why the event at Index was not accepted. ID is its id, when
// it had one.
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

// api serves POST /v1/events: it checks the route, the media type and the
// body, reads the events, stores them and answers.
func (h *Handler) api(ctx context.Context, r apigw.Request) apigw.Response {
	start := h.now()
	if refused := checkRoute(r); refused != nil {
		return *refused
	}
	batch, refused := contentMode(r)
	if refused != nil {
		return *refused
	}
	body, refused := requestBody(r)
	if refused != nil {
		return *refused
	}
	req := h.newAPIRequest(r)
	p, refused := h.parseEvents(body, batch, req)
	if refused != nil {
		return *refused
	}
	ctx, cancel := deadline.Budget(ctx)
	defer cancel()
	outcomes, st := h.store(ctx, p.units)
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

// answer reports what became of the request's events: 503 when any could
// not be stored for now, else 202 if at least one was accepted, else 400.
func (h *Handler) answer(ctx context.Context, p parsed, outcomes []outcome, st storeStats, start time.Time) apigw.Response {
	var accepted, nQuarantined, failed int
	for n := range p.units {
		switch outcomes[n] {
		case stored:
			accepted++
		case quarantined:
			nQuarantined++
		default:
			failed++
		}
	}
	rejections := p.rejections
	// Events DynamoDB refused were quarantined by store: report them too.
	for n, u := range p.units {
		if u.event == nil && outcomes[n] == quarantined && !rejectedAt(rejections, u.group) {
			rejections = append(rejections, Rejection{Index: u.group, Error: u.rejected.Reason})
		}
	}
	h.report(ctx, "api", accepted, nQuarantined, failed, st, start)
	if failed > 0 {
		return apigw.Error(http.StatusServiceUnavailable,
			"storage is unavailable: %d of %d events were not stored; sending the same request again is safe", failed, len(p.units)).
			With("Retry-After", fmt.Sprint(RetryAfterSeconds))
	}
	out := Response{Accepted: accepted, Rejected: rejections}
	if out.Rejected == nil {
		out.Rejected = []Rejection{}
	}
	if accepted == 0 {
		return apigw.JSON(http.StatusBadRequest, out)
	}
	return apigw.JSON(http.StatusAccepted, out)
}

func rejectedAt(rs []Rejection, index int) bool {
	for _, r := range rs {
		if r.Index == index {
			return true
		}
	}
	return false
}
