// Package apigw is what both functions need of API Gateway: telling the
// invocation payloads apart, one view of HTTP API (v2) and REST API (v1)
// proxy requests, and JSON answers in either format.
package apigw

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

// Shape is the kind of an invocation payload.
type Shape int

// The shapes a function can be invoked with.
const (
	Unknown Shape = iota
	Kinesis       // events.KinesisEvent
	HTTP          // events.APIGatewayV2HTTPRequest (payload format 2.0)
	REST          // events.APIGatewayProxyRequest (payload format 1.0)
)

// ShapeOf tells what payload a function was invoked with.
func ShapeOf(payload []byte) (Shape, error) {
	var probe struct {
		Records []struct {
			EventSource string `json:"eventSource"`
		} `json:"Records"`
		Version    string `json:"version"`
		HTTPMethod string `json:"httpMethod"`
	}
	if err := json.Unmarshal(payload, &probe); err != nil {
		return Unknown, fmt.Errorf("the invocation payload is not a JSON object: %w", err)
	}
	switch {
	case len(probe.Records) > 0 && probe.Records[0].EventSource == "aws:kinesis":
		return Kinesis, nil
	case probe.Version == "2.0":
		return HTTP, nil
	case probe.HTTPMethod != "":
		return REST, nil
	}
	return Unknown, nil
}

// Request is what v1 and v2 proxy requests have in common.
type Request struct {
	Method, Path string
	RawQuery     string
	Headers      map[string]string
	Body         string
	Base64       bool
	RequestID    string
	Received     time.Time // zero when API Gateway did not say
	// RouteKey is the route API Gateway matched, "POST /v1/events": an
	// HTTP API's routeKey, or a REST API's method and resource. Empty
	// when the request did not come through a route (a hand-made
	// invocation); "$default" is taken as empty.
	RouteKey string
	// PathParams are a REST API resource's path parameters.
	PathParams map[string]string
	// Caller is who signed the request, when IAM authorized it.
	Caller Caller
}

// Caller is the IAM principal that signed a request
// (requestContext.authorizer.iam, or a REST API's identity).
type Caller struct {
	// ARN is the caller's ARN: arn:aws:sts::<account>:assumed-role/<role>/<session>
	// for an assumed role.
	ARN string
	// UserID is the caller's unique id: "AROA…:<session>" for an assumed
	// role, whose first part is the role's unique id.
	UserID string
}

// FromHTTP reads an HTTP API (v2) request.
func FromHTTP(req events.APIGatewayV2HTTPRequest) Request {
	r := Request{
		Method:    req.RequestContext.HTTP.Method,
		Path:      req.RawPath,
		RawQuery:  req.RawQueryString,
		Headers:   req.Headers,
		Body:      req.Body,
		Base64:    req.IsBase64Encoded,
		RequestID: req.RequestContext.RequestID,
		RouteKey:  req.RouteKey,
	}
	if r.RouteKey == "" {
		r.RouteKey = req.RequestContext.RouteKey
	}
	if r.RouteKey == "$default" {
		r.RouteKey = ""
	}
	if a := req.RequestContext.Authorizer; a != nil && a.IAM != nil {
		r.Caller = Caller{ARN: a.IAM.UserARN, UserID: a.IAM.UserID}
	}
	if r.Path == "" {
		r.Path = req.RequestContext.HTTP.Path
	}
	if req.RequestContext.TimeEpoch > 0 {
		r.Received = time.UnixMilli(req.RequestContext.TimeEpoch).UTC()
	}
	return r
}

// FromREST reads a REST API (v1) proxy request.
func FromREST(req events.APIGatewayProxyRequest) Request {
	r := Request{
		Method:    req.HTTPMethod,
		Path:      req.Path,
		Headers:   req.Headers,
		Body:      req.Body,
		Base64:    req.IsBase64Encoded,
		RequestID: req.RequestContext.RequestID,
		Caller:    Caller{ARN: req.RequestContext.Identity.UserArn, UserID: req.RequestContext.Identity.User},
	}
	if req.Resource != "" {
		r.RouteKey = req.HTTPMethod + " " + req.Resource
		r.PathParams = req.PathParameters
	}
	if req.RequestContext.RequestTimeEpoch > 0 {
		r.Received = time.UnixMilli(req.RequestContext.RequestTimeEpoch).UTC()
	}
	if len(r.Headers) == 0 && len(req.MultiValueHeaders) > 0 {
		r.Headers = map[string]string{}
		for k, v := range req.MultiValueHeaders {
			r.Headers[k] = strings.Join(v, ",")
		}
	}
	q := url.Values{}
	for k, vs := range req.MultiValueQueryStringParameters {
		q[k] = vs
	}
	if len(q) == 0 {
		for k, v := range req.QueryStringParameters {
			q.Set(k, v)
		}
	}
	r.RawQuery = q.Encode()
	return r
}

// Header is the request header name, whatever its case.
func (r Request) Header(name string) string {
	for k, v := range r.Headers {
		if strings.EqualFold(k, name) {
			return v
		}
	}
	return ""
}

// Response is an answer, in either format.
type Response struct {
	Status  int
	Headers map[string]string
	Body    string
}

// JSON answers status with v as the body.
func JSON(status int, v any) Response {
	b, err := json.Marshal(v)
	if err != nil {
		return Error(http.StatusInternalServerError, "encode response: %v", err)
	}
	return Response{Status: status, Headers: map[string]string{"Content-Type": "application/json"}, Body: string(b)}
}

// Error answers status with {"error": "..."}.
func Error(status int, format string, args ...any) Response {
	return JSON(status, map[string]string{"error": fmt.Sprintf(format, args...)})
}

// With adds a header.
func (r Response) With(name, value string) Response {
	r.Headers[name] = value
	return r
}

// HTTP is the answer as an HTTP API (v2) response.
func (r Response) HTTP() events.APIGatewayV2HTTPResponse {
	return events.APIGatewayV2HTTPResponse{StatusCode: r.Status, Headers: r.Headers, Body: r.Body}
}

// REST is the answer as a REST API (v1) proxy response.
func (r Response) REST() events.APIGatewayProxyResponse {
	return events.APIGatewayProxyResponse{StatusCode: r.Status, Headers: r.Headers, Body: r.Body}
}
