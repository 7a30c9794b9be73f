// Package httpapi serves API Gateway HTTP API (payload format 2.0) handlers
// over plain net/http, the way API Gateway would invoke them, so the local
// server runs the very handlers Lambda runs.
package httpapi

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"

	"github.com/shardline/shardline/internal/payload"
)

// MaxBodyBytes is API Gateway's payload limit for HTTP APIs.
const MaxBodyBytes = 10 << 20

// MaxInvokeBytes is Lambda's limit on a synchronous invocation's payload:
// the whole event, the body in it as a JSON string. A body API Gateway
// takes can still make an event over it (6 MB of JSON with quotes and <
// in it, escaped); API Gateway then answers 413 without invoking the
// function, as a body over MaxBodyBytes.
const MaxInvokeBytes = payload.LambdaBytes

// Func is an HTTP API Lambda handler.
type Func func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error)

// Mux routes "METHOD /path" route keys to handlers, as API Gateway routes do.
type Mux struct {
	routes map[string]Func
	// Timeout is the integration timeout; API Gateway's is 30 seconds.
	Timeout time.Duration
}

// NewMux returns an empty Mux with API Gateway's 30-second timeout.
func NewMux() *Mux { return &Mux{routes: map[string]Func{}, Timeout: 30 * time.Second} }

// Handle routes requests whose method and path match routeKey, such as
// "POST /v1/events", to fn.
func (m *Mux) Handle(routeKey string, fn Func) { m.routes[routeKey] = fn }

// ServeHTTP turns r into the event API Gateway would send, calls the
// handler and writes its answer.
func (m *Mux) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	routeKey := r.Method + " " + r.URL.Path
	fn, ok := m.routes[routeKey]
	if !ok {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, `{"message":"Not Found"}`)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxBodyBytes+1))
	if err != nil {
		http.Error(w, fmt.Sprintf(`{"message":"read body: %v"}`, err), http.StatusBadRequest)
		return
	}
	if len(body) > MaxBodyBytes {
		tooLarge(w)
		return
	}
	req := Request(r, body, routeKey)
	if event, err := json.Marshal(req); err != nil || len(event) > MaxInvokeBytes {
		tooLarge(w)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), m.Timeout)
	defer cancel()
	resp, err := fn(ctx, req)
	if err != nil {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusInternalServerError)
		fmt.Fprint(w, `{"message":"Internal Server Error"}`)
		return
	}
	Write(w, resp)
}

// tooLarge answers as API Gateway does a request it will not pass on for
// its size.
func tooLarge(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusRequestEntityTooLarge)
	fmt.Fprint(w, `{"message":"Request Entity Too Large"}`)
}

// Request is the API Gateway event for r with the given body.
func Request(r *http.Request, body []byte, routeKey string) events.APIGatewayV2HTTPRequest {
	headers := map[string]string{}
	for k, v := range r.Header {
		headers[strings.ToLower(k)] = strings.Join(v, ",")
	}
	query := map[string]string{}
	for k, v := range r.URL.Query() {
		query[k] = strings.Join(v, ",")
	}
	ip, _, _ := net.SplitHostPort(r.RemoteAddr)
	now := time.Now()
	req := events.APIGatewayV2HTTPRequest{
		Version:               "2.0",
		RouteKey:              routeKey,
		RawPath:               r.URL.Path,
		RawQueryString:        r.URL.RawQuery,
		Headers:               headers,
		QueryStringParameters: query,
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			RouteKey:  routeKey,
			Stage:     "$default",
			RequestID: requestID(),
			Time:      now.UTC().Format("02/Jan/2006:15:04:05 -0700"),
			TimeEpoch: now.UnixMilli(),
			HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{
				Method:    r.Method,
				Path:      r.URL.Path,
				Protocol:  r.Proto,
				SourceIP:  ip,
				UserAgent: r.UserAgent(),
			},
		},
	}
	// API Gateway passes text bodies as they are and base64-encodes others.
	if utf8.Valid(body) {
		req.Body = string(body)
	} else {
		req.Body, req.IsBase64Encoded = base64.StdEncoding.EncodeToString(body), true
	}
	return req
}

// Write writes a handler's answer as API Gateway would.
func Write(w http.ResponseWriter, resp events.APIGatewayV2HTTPResponse) {
	for k, v := range resp.Headers {
		w.Header().Set(k, v)
	}
	for k, vs := range resp.MultiValueHeaders {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	for _, c := range resp.Cookies {
		w.Header().Add("Set-Cookie", c)
	}
	body := []byte(resp.Body)
	if resp.IsBase64Encoded {
		b, err := base64.StdEncoding.DecodeString(resp.Body)
		if err != nil {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		body = b
	}
	status := resp.StatusCode
	if status == 0 {
		status = http.StatusOK
	}
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

func requestID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
