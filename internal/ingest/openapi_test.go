package ingest

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/shardline/shardline/testkit/openapitest"
)

// apiHandler is a Handler whose every answer to an API Gateway request,
// whichever entry point served it, is checked against the OpenAPI document
// (local/openapi): an answer the document does not describe fails the
// test. The tests reach the handler through it; benchmarks do not.
type apiHandler struct {
	*Handler
	t testing.TB
}

// checked wraps h for t.
func checked(t testing.TB, h *Handler) apiHandler { return apiHandler{Handler: h, t: t} }

// HTTP is Handler.HTTP, checked.
func (h apiHandler) HTTP(ctx context.Context, req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	h.t.Helper()
	resp, err := h.Handler.HTTP(ctx, req)
	if err == nil {
		openapitest.CheckHTTP(h.t, openapitest.Ingest, req, resp)
	}
	return resp, err
}

// REST is Handler.REST, checked.
func (h apiHandler) REST(ctx context.Context, req events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, error) {
	h.t.Helper()
	resp, err := h.Handler.REST(ctx, req)
	if err == nil {
		openapitest.CheckREST(h.t, openapitest.Ingest, req, resp)
	}
	return resp, err
}

// Invoke is Handler.Invoke, checked when the payload is an API Gateway
// request.
func (h apiHandler) Invoke(ctx context.Context, payload json.RawMessage) (any, error) {
	h.t.Helper()
	out, err := h.Handler.Invoke(ctx, payload)
	if err == nil {
		openapitest.CheckInvoke(h.t, openapitest.Ingest, payload, out)
	}
	return out, err
}
