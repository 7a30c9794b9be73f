package openapitest

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"testing"
)

// Client is an HTTP client whose every exchange with the API is checked
// against the document for f; a mismatch fails t.
func Client(t testing.TB, f Function) *http.Client {
	return &http.Client{Transport: Transport(t, f, nil)}
}

// Transport wraps base (nil: http.DefaultTransport) so that every exchange
// through it is checked against the document for f; a mismatch fails t.
func Transport(t testing.TB, f Function, base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	return &transport{t: t, f: f, base: base}
}

type transport struct {
	t    testing.TB
	f    Function
	base http.RoundTripper
}

// RoundTrip sends a copy of req whose body it keeps, then reads the answer
// whole, checks the two, and returns the answer with its body to read again.
func (tr *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	out := req.Clone(req.Context())
	if req.Body != nil && req.Body != http.NoBody {
		var err error
		body, err = io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("openapitest: read the request body: %w", err)
		}
		out.Body = io.NopCloser(bytes.NewReader(body))
	}
	resp, err := tr.base.RoundTrip(out)
	if err != nil {
		return resp, err
	}
	respBody, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, fmt.Errorf("openapitest: read the answer: %w", err)
	}
	resp.Body = io.NopCloser(bytes.NewReader(respBody))
	report(tr.t, tr.f, func() (Exchange, error) {
		return Exchange{
			Method: req.Method, Path: req.URL.Path, RawQuery: req.URL.RawQuery, Header: req.Header, Body: body,
			Status: resp.StatusCode, RespHeader: resp.Header, RespBody: respBody,
		}, nil
	})
	return resp, nil
}
