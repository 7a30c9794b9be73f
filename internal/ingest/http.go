package ingest

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/shardline/shardline/internal/cloudevent"
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

// apiRequest is what the v1 and v2 API Gateway requests have in common.
type apiRequest struct {
	method, path string
	headers      map[string]string
	body         string
	base64       bool
	requestID    string
	received     time.Time
}

type apiResponse struct {
	status  int
	headers map[string]string
	body    []byte
}

// HTTP serves an API Gateway HTTP API (payload format 2.0) request.
func (h *Handler) HTTP(ctx context.Context, req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	r := apiRequest{
		method:    req.RequestContext.HTTP.Method,
		path:      req.RawPath,
		headers:   req.Headers,
		body:      req.Body,
		base64:    req.IsBase64Encoded,
		requestID: req.RequestContext.RequestID,
		received:  time.UnixMilli(req.RequestContext.TimeEpoch),
	}
	if r.path == "" {
		r.path = req.RequestContext.HTTP.Path
	}
	resp := h.api(ctx, r)
	return events.APIGatewayV2HTTPResponse{StatusCode: resp.status, Headers: resp.headers, Body: string(resp.body)}, nil
}

// REST serves an API Gateway REST API proxy (payload format 1.0) request.
func (h *Handler) REST(ctx context.Context, req events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, error) {
	r := apiRequest{
		method:    req.HTTPMethod,
		path:      req.Path,
		headers:   req.Headers,
		body:      req.Body,
		base64:    req.IsBase64Encoded,
		requestID: req.RequestContext.RequestID,
		received:  time.UnixMilli(req.RequestContext.RequestTimeEpoch),
	}
	if len(r.headers) == 0 && len(req.MultiValueHeaders) > 0 {
		r.headers = map[string]string{}
		for k, v := range req.MultiValueHeaders {
			r.headers[k] = strings.Join(v, ",")
		}
	}
	resp := h.api(ctx, r)
	return events.APIGatewayProxyResponse{StatusCode: resp.status, Headers: resp.headers, Body: string(resp.body)}, nil
}

func header(hs map[string]string, name string) string {
	for k, v := range hs {
		if strings.EqualFold(k, name) {
			return v
		}
	}
	return ""
}

func errorResponse(status int, format string, args ...any) apiResponse {
	b, _ := json.Marshal(map[string]string{"error": fmt.Sprintf(format, args...)})
	return apiResponse{status: status, headers: map[string]string{"Content-Type": "application/json"}, body: b}
}

func jsonResponse(status int, v any) apiResponse {
	b, err := json.Marshal(v)
	if err != nil {
		return errorResponse(http.StatusInternalServerError, "encode response: %v", err)
	}
	return apiResponse{status: status, headers: map[string]string{"Content-Type": "application/json"}, body: b}
}

// api serves POST /v1/events.
func (h *Handler) api(ctx context.Context, r apiRequest) apiResponse {
	start := h.now()
	if !strings.HasSuffix(strings.TrimRight(r.path, "/"), Route) {
		return errorResponse(http.StatusNotFound, "no route %s %s; events are sent with POST %s", r.method, r.path, Route)
	}
	if r.method != http.MethodPost {
		resp := errorResponse(http.StatusMethodNotAllowed, "method %s not allowed on %s; use POST", r.method, Route)
		resp.headers["Allow"] = http.MethodPost
		return resp
	}
	ct := header(r.headers, "Content-Type")
	batch := false
	if ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		switch {
		case err != nil:
			return errorResponse(http.StatusUnsupportedMediaType, "Content-Type %q cannot be parsed: %v", ct, err)
		case mt == "application/cloudevents-batch+json":
			batch = true
		case mt == "application/json", mt == "application/cloudevents+json":
		default:
			return errorResponse(http.StatusUnsupportedMediaType,
				"Content-Type %q is not supported; send application/json, application/cloudevents+json or application/cloudevents-batch+json", mt)
		}
	}
	// Refuse an oversized body before copying or decoding it.
	size := len(r.body)
	if r.base64 {
		size = base64.StdEncoding.DecodedLen(len(r.body))
	}
	if size > MaxRequestBytes+2 || (!r.base64 && size > MaxRequestBytes) {
		return errorResponse(http.StatusRequestEntityTooLarge, "body: %d bytes is over the %d-byte limit; split it into several requests", size, MaxRequestBytes)
	}
	body := []byte(r.body)
	if r.base64 {
		var err error
		if body, err = base64.StdEncoding.DecodeString(r.body); err != nil {
			return errorResponse(http.StatusBadRequest, "body: marked base64-encoded but is not valid base64: %v", err)
		}
		if len(body) > MaxRequestBytes {
			return errorResponse(http.StatusRequestEntityTooLarge, "body: %d bytes is over the %d-byte limit; split it into several requests", len(body), MaxRequestBytes)
		}
	}
	received := r.received.UTC()
	now := h.now()
	if received.IsZero() || received.Unix() <= 0 {
		received = now.UTC()
	}
	requestID := r.requestID
	if requestID == "" {
		requestID = fmt.Sprintf("local-%d", now.UnixNano())
	}
	origin := item.Origin{RequestID: requestID}

	raws, array, err := cloudevent.Split(body)
	if err == nil && batch && !array {
		err = &cloudevent.FieldError{Field: "body", Problem: "a CloudEvents batch must be a JSON array"}
	}
	var units []unit
	var rejections []Rejection
	if err != nil {
		// The body as a whole is unusable: quarantine it as one record.
		units = append(units, unit{group: 0, origin: origin, received: received,
			rejected: &item.Rejected{ReceivedAt: received, Reason: err.Error(), Raw: body, Origin: origin}})
		rejections = append(rejections, Rejection{Index: 0, Error: err.Error()})
	} else {
		if len(raws) == 0 {
			return jsonResponse(http.StatusBadRequest, Response{Rejected: []Rejection{}, Error: "body: holds no events"})
		}
		if len(raws) > MaxRequestEvents {
			return errorResponse(http.StatusRequestEntityTooLarge, "body: %d events is over the limit of %d per request; split it", len(raws), MaxRequestEvents)
		}
		for i, raw := range raws {
			o := origin
			if array {
				o.Index = &i
			}
			e, err := cloudevent.ParseElement(raw, now, received, h.limits())
			if err != nil {
				units = append(units, unit{group: i, origin: o, received: received,
					rejected: &item.Rejected{ReceivedAt: received, Reason: err.Error(), Raw: raw, Origin: o}})
				rejections = append(rejections, Rejection{Index: i, ID: idOf(raw), Error: err.Error()})
				continue
			}
			units = append(units, unit{group: i, event: &e, origin: o, received: received})
		}
	}

	ctx, cancel := deadline.Budget(ctx)
	defer cancel()
	outcomes, st := h.store(ctx, units)
	var accepted, nQuarantined, failed int
	for n := range units {
		switch outcomes[n] {
		case stored:
			accepted++
		case quarantined:
			nQuarantined++
		default:
			failed++
		}
	}
	// Events DynamoDB refused were quarantined by store: report them too.
	for n, u := range units {
		if u.event == nil && outcomes[n] == quarantined && !rejectedAt(rejections, u.group) {
			rejections = append(rejections, Rejection{Index: u.group, Error: u.rejected.Reason})
		}
	}
	h.report(ctx, "api", accepted, nQuarantined, failed, st, start)
	if failed > 0 {
		resp := errorResponse(http.StatusServiceUnavailable,
			"storage is unavailable: %d of %d events were not stored; sending the same request again is safe", failed, len(units))
		resp.headers["Retry-After"] = fmt.Sprint(RetryAfterSeconds)
		return resp
	}
	out := Response{Accepted: accepted, Rejected: rejections}
	if out.Rejected == nil {
		out.Rejected = []Rejection{}
	}
	if accepted == 0 {
		return jsonResponse(http.StatusBadRequest, out)
	}
	return jsonResponse(http.StatusAccepted, out)
}

func rejectedAt(rs []Rejection, index int) bool {
	for _, r := range rs {
		if r.Index == index {
			return true
		}
	}
	return false
}

// idOf is the event's id, if raw is an object with a string id.
func idOf(raw []byte) string {
	var v struct {
		ID any `json:"id"`
	}
	if json.Unmarshal(raw, &v) != nil {
		return ""
	}
	s, _ := v.ID.(string)
	return s
}
