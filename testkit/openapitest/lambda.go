package openapitest

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/shardline/shardline/internal/apigw"
)

// CheckHTTP checks an HTTP API (v2) request to f's handler and its answer;
// a mismatch fails t.
func CheckHTTP(t testing.TB, f Function, req events.APIGatewayV2HTTPRequest, resp events.APIGatewayV2HTTPResponse) {
	t.Helper()
	report(t, f, func() (Exchange, error) {
		return exchange(apigw.FromHTTP(req), resp.StatusCode, resp.Headers, resp.MultiValueHeaders, resp.Body, resp.IsBase64Encoded)
	})
}

// CheckREST checks a REST API (v1) proxy request to f's handler and its
// answer; a mismatch fails t.
func CheckREST(t testing.TB, f Function, req events.APIGatewayProxyRequest, resp events.APIGatewayProxyResponse) {
	t.Helper()
	report(t, f, func() (Exchange, error) {
		return exchange(apigw.FromREST(req), resp.StatusCode, resp.Headers, resp.MultiValueHeaders, resp.Body, resp.IsBase64Encoded)
	})
}

// CheckInvoke checks an invocation of f's Lambda entry point with payload,
// which answered out: API Gateway requests are checked, other payloads
// (Kinesis events) are not part of the HTTP API.
func CheckInvoke(t testing.TB, f Function, payload []byte, out any) {
	t.Helper()
	shape, err := apigw.ShapeOf(payload)
	if err != nil {
		return
	}
	switch shape {
	case apigw.HTTP:
		var req events.APIGatewayV2HTTPRequest
		resp, ok := out.(events.APIGatewayV2HTTPResponse)
		if err := json.Unmarshal(payload, &req); err != nil || !ok {
			t.Errorf("openapitest: an HTTP API request answered with %T (%v)", out, err)
			return
		}
		CheckHTTP(t, f, req, resp)
	case apigw.REST:
		var req events.APIGatewayProxyRequest
		resp, ok := out.(events.APIGatewayProxyResponse)
		if err := json.Unmarshal(payload, &req); err != nil || !ok {
			t.Errorf("openapitest: a REST API request answered with %T (%v)", out, err)
			return
		}
		CheckREST(t, f, req, resp)
	}
}

// report runs the check of the exchange x builds, and fails t with what
// it finds. It uses Errorf, so it may be called from any goroutine.
func report(t testing.TB, f Function, x func() (Exchange, error)) {
	t.Helper()
	c, err := New(f)
	if err != nil {
		t.Errorf("openapitest: %v", err)
		return
	}
	ex, err := x()
	if err == nil {
		err = c.Check(context.Background(), ex)
	}
	if err != nil {
		t.Errorf("openapitest: %v", err)
	}
}

// exchange is an API Gateway request and a handler's answer as one
// Exchange, with bodies decoded from base64 where API Gateway encodes them.
func exchange(r apigw.Request, status int, headers map[string]string, multi map[string][]string, body string, b64 bool) (Exchange, error) {
	x := Exchange{Method: r.Method, Path: r.Path, RawQuery: r.RawQuery, Header: http.Header{}, Status: status, RespHeader: http.Header{}}
	for k, v := range r.Headers {
		x.Header.Set(k, v)
	}
	var err error
	if x.Body, err = decodeBody(r.Body, r.Base64); err != nil {
		return x, fmt.Errorf("%v: request body: %w", x, err)
	}
	for k, v := range headers {
		x.RespHeader.Set(k, v)
	}
	for k, vs := range multi {
		for _, v := range vs {
			x.RespHeader.Add(k, v)
		}
	}
	if x.RespBody, err = decodeBody(body, b64); err != nil {
		return x, fmt.Errorf("%v: answer body: %w", x, err)
	}
	return x, nil
}

// decodeBody is body's bytes; a request marked base64-encoded that is not
// is checked as sent (the API must refuse it).
func decodeBody(body string, b64 bool) ([]byte, error) {
	if !b64 {
		return []byte(body), nil
	}
	b, err := base64.StdEncoding.DecodeString(body)
	if err != nil {
		return []byte(body), nil
	}
	return b, nil
}
