package ingest

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"strings"

	"github.com/aws/aws-lambda-go/events"

	"github.com/shardline/shardline/internal/apigw"
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

// HTTP serves an API Gateway HTTP API (payload format 2.0) request.
func (h *Handler) HTTP(ctx context.Context, req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	return h.api(ctx, apigw.FromHTTP(req)).HTTP(), nil
}

// REST serves an API Gateway REST API proxy (payload format 1.0) request.
func (h *Handler) REST(ctx context.Context, req events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, error) {
	return h.api(ctx, apigw.FromREST(req)).REST(), nil
}

// api serves POST /v1/events.
func (h *Handler) api(ctx context.Context, r apigw.Request) apigw.Response {
	start := h.now()
	if !strings.HasSuffix(strings.TrimRight(r.Path, "/"), Route) {
		return apigw.Error(http.StatusNotFound, "no route %s %s; events are sent with POST %s", r.Method, r.Path, Route)
	}
	if r.Method != http.MethodPost {
		return apigw.Error(http.StatusMethodNotAllowed, "method %s not allowed on %s; use POST", r.Method, Route).With("Allow", http.MethodPost)
	}
	ct := r.Header("Content-Type")
	batch := false
	if ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		switch {
		case err != nil:
			return apigw.Error(http.StatusUnsupportedMediaType, "Content-Type %q cannot be parsed: %v", ct, err)
		case mt == "application/cloudevents-batch+json":
			batch = true
		case mt == "application/json", mt == "application/cloudevents+json":
		default:
			return apigw.Error(http.StatusUnsupportedMediaType,
				"Content-Type %q is not supported; send application/json, application/cloudevents+json or application/cloudevents-batch+json", mt)
		}
	}
	// Refuse an oversized body before copying or decoding it.
	size := len(r.Body)
	if r.Base64 {
		size = base64.StdEncoding.DecodedLen(len(r.Body))
	}
	if size > MaxRequestBytes+2 || (!r.Base64 && size > MaxRequestBytes) {
		return apigw.Error(http.StatusRequestEntityTooLarge, "body: %d bytes is over the %d-byte limit; split it into several requests", size, MaxRequestBytes)
	}
	body := []byte(r.Body)
	if r.Base64 {
		var err error
		if body, err = base64.StdEncoding.DecodeString(r.Body); err != nil {
			return apigw.Error(http.StatusBadRequest, "body: marked base64-encoded but is not valid base64: %v", err)
		}
		if len(body) > MaxRequestBytes {
			return apigw.Error(http.StatusRequestEntityTooLarge, "body: %d bytes is over the %d-byte limit; split it into several requests", len(body), MaxRequestBytes)
		}
	}
	now := h.now()
	received := r.Received
	if received.IsZero() {
		received = now.UTC()
	}
	requestID := r.RequestID
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
		units = append(units, rejectedUnit(0, body, err.Error(), origin, received))
		rejections = append(rejections, Rejection{Index: 0, Error: err.Error()})
	} else {
		if len(raws) == 0 {
			return apigw.JSON(http.StatusBadRequest, Response{Rejected: []Rejection{}, Error: "body: holds no events"})
		}
		if len(raws) > MaxRequestEvents {
			return apigw.Error(http.StatusRequestEntityTooLarge, "body: %d events is over the limit of %d per request; split it", len(raws), MaxRequestEvents)
		}
		for i, raw := range raws {
			o := origin
			if array {
				o.Index = &i
			}
			e, err := cloudevent.ParseElement(raw, now, received, h.limits())
			if err != nil {
				units = append(units, rejectedUnit(i, raw, err.Error(), o, received))
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
		return apigw.Error(http.StatusServiceUnavailable,
			"storage is unavailable: %d of %d events were not stored; sending the same request again is safe", failed, len(units)).
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
