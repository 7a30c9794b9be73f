package producer

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/shardline/shardline/internal/backoff"
	"github.com/shardline/shardline/internal/payload"
)

// Limits of one POST /v1/events request. MaxPayloadBytes is the one that
// binds: Lambda receives the body as a JSON string inside API Gateway's
// event, where a " or a < takes 2 or 6 bytes, and the whole event must fit
// Lambda's 6,291,456-byte invocation payload. A body of MaxRequestBytes of
// plain JSON is already past it.
const (
	MaxRequestEvents = 1000
	MaxRequestBytes  = 6 << 20
	// MaxPayloadBytes bounds a body as a JSON string (escapes and quotes
	// counted): Lambda's limit less 32 KiB kept for the headers and the
	// request context (docs/producer.md).
	MaxPayloadBytes = payload.MaxBodyBytes // 6,258,688
)

// HTTP sends events to shardline's HTTP API, POST /v1/events, in batches.
// It is safe for concurrent use. Make one with NewHTTP.
type HTTP struct {
	url      string
	client   *http.Client
	signer   *Signer // nil: unsigned
	attempts int
	maxWait  time.Duration
	backoff  backoff.Policy
}

// HTTPOption configures NewHTTP.
type HTTPOption func(*HTTP)

// WithHTTPClient sends with c (default http.DefaultClient).
func WithHTTPClient(c *http.Client) HTTPOption { return func(h *HTTP) { h.client = c } }

// WithSigner signs each request with SigV4 for API Gateway (service
// execute-api) in region, with credentials from creds, such as
// config.LoadDefaultConfig's. Without it requests are not signed, as
// `make run`'s local server wants.
func WithSigner(creds aws.CredentialsProvider, region string) HTTPOption {
	return func(h *HTTP) { h.signer = NewSigner(creds, region) }
}

// WithAttempts sets how many requests a batch gets before Send gives up
// (default 5).
func WithAttempts(n int) HTTPOption { return func(h *HTTP) { h.attempts = max(n, 1) } }

// WithMaxRetryAfter caps the wait a Retry-After header asks for
// (default 30 s).
func WithMaxRetryAfter(d time.Duration) HTTPOption { return func(h *HTTP) { h.maxWait = max(d, 0) } }

// WithTenant sends to the tenant's route, POST /v1/tenants/<name>/events,
// instead of POST /v1/events: the API takes only the tenant's sources
// there, and refuses a batch holding another's with 403 (a StatusError).
func WithTenant(name string) HTTPOption {
	return func(h *HTTP) {
		h.url = strings.TrimSuffix(h.url, "/v1/events") + "/v1/tenants/" + url.PathEscape(name) + "/events"
	}
}

// path is the path of the route h posts to.
func (h *HTTP) path() string {
	if u, err := url.Parse(h.url); err == nil {
		return u.Path
	}
	return "/v1/events"
}

// NewHTTP returns a client of the API at baseURL (such as
// "https://abc.execute-api.eu-west-1.amazonaws.com" or
// "http://127.0.0.1:8080").
func NewHTTP(baseURL string, opts ...HTTPOption) *HTTP {
	h := &HTTP{
		url:      strings.TrimRight(baseURL, "/") + "/v1/events",
		client:   http.DefaultClient,
		attempts: 5,
		maxWait:  30 * time.Second,
		backoff:  backoff.Policy{Base: 200 * time.Millisecond, Max: 10 * time.Second},
	}
	for _, o := range opts {
		o(h)
	}
	return h
}

// Result is what became of the events given to HTTP.Send. Indexes are
// positions in Send's arguments.
type Result struct {
	IDs      []string    // each event's id, as given or as Send made it
	Accepted int         // events stored
	Rejected []Rejection // events refused (and quarantined), or not sendable
	Failed   []Rejection // events not stored when Send gave up
	Requests int         // requests made
}

// Rejection says why the event at Index was not stored.
type Rejection struct {
	Index int    `json:"index"`
	ID    string `json:"id,omitempty"`
	Error string `json:"error"`
}

// StatusError is an answer Send does not retry, such as 413 or 403.
type StatusError struct {
	Status int
	Body   string
	// Path is the route's path: /v1/events, or a tenant's (WithTenant).
	Path string
}

func (e *StatusError) Error() string {
	path := e.Path
	if path == "" {
		path = "/v1/events"
	}
	return fmt.Sprintf("producer: POST %s: %d %s: %s", path, e.Status, http.StatusText(e.Status), e.Body)
}

// Send posts events (each a json.RawMessage, []byte or string of a
// CloudEvent's JSON, or a value that encodes to one) as JSON arrays of at
// most MaxRequestEvents events whose body fits MaxPayloadBytes as Lambda
// receives it (an event that cannot is rejected unsent). Events without an id
// get a UUIDv7, those without a time the present time, so that a retry
// stores nothing twice. It retries 503 (only the events the answer lists
// in retry), 429, 500, 502, 504 and transport errors, waiting as
// Retry-After says (capped) or with jittered back-off. The error is
// non-nil when an event could not be stored for now (Result.Failed) or an
// answer was not one to retry.
func (h *HTTP) Send(ctx context.Context, events ...any) (Result, error) {
	res := Result{IDs: make([]string, len(events))}
	var ready []pending
	now := time.Now()
	for i, ev := range events {
		e, err := prepare(ev, now)
		res.IDs[i] = e.id
		switch {
		case err != nil:
			res.Rejected = append(res.Rejected, Rejection{Index: i, Error: err.Error()})
		case alone(e.data) > MaxPayloadBytes:
			res.Rejected = append(res.Rejected, Rejection{Index: i, ID: e.id, Error: fmt.Sprintf(
				"event: %d bytes, %d as the JSON string Lambda receives, is over the %d a request can carry", len(e.data), alone(e.data), MaxPayloadBytes)})
		default:
			ready = append(ready, pending{index: i, event: e})
		}
	}
	for _, batch := range batches(ready) {
		if unsent, err := h.sendBatch(ctx, batch, &res); err != nil {
			for _, b := range unsent {
				res.Failed = append(res.Failed, Rejection{Index: b.index, ID: b.event.id, Error: err.Error()})
			}
			return res, err
		}
	}
	return res, nil
}

type pending struct {
	index int
	event event
}

// alone is what a request of the one event takes in Lambda's payload.
func alone(data []byte) int {
	return payload.Size{}.AddString("[").Add(data).AddString("]").Bytes()
}

// batches splits events into requests' worth: at most MaxRequestEvents,
// and a body ("[", the events and their commas, "]") that takes at most
// MaxPayloadBytes in Lambda's payload.
func batches(events []pending) [][]pending {
	var out [][]pending
	start, body := 0, payload.Size{}.AddString("[")
	for i, e := range events {
		if i > start && (i-start == MaxRequestEvents || body.AddString(",").Add(e.event.data).AddString("]").Bytes() > MaxPayloadBytes) {
			out = append(out, events[start:i])
			start, body = i, payload.Size{}.AddString("[")
		}
		if i > start {
			body = body.AddString(",")
		}
		body = body.Add(e.event.data)
	}
	if start < len(events) {
		out = append(out, events[start:])
	}
	return out
}

// answer is the body of an answer to POST /v1/events.
type answer struct {
	Accepted int         `json:"accepted"`
	Rejected []Rejection `json:"rejected"`
	Retry    []Rejection `json:"retry"`
	Error    string      `json:"error"`
}

// sendBatch posts batch until every event is accepted or rejected, and
// adds what became of them to res. When it gives up, it returns the events
// not stored with the error.
func (h *HTTP) sendBatch(ctx context.Context, batch []pending, res *Result) ([]pending, error) {
	var lastErr error
	for attempt := 1; ; attempt++ {
		status, header, body, err := h.post(ctx, batch)
		res.Requests++
		var a answer
		if err == nil {
			json.Unmarshal(body, &a)
		}
		switch {
		case err != nil:
			if ctx.Err() != nil {
				return batch, err
			}
			lastErr = err
		case status == http.StatusAccepted || status == http.StatusBadRequest && a.Rejected != nil:
			res.add(batch, a)
			return nil, nil
		case status == http.StatusServiceUnavailable && a.Retry != nil:
			res.add(batch, a)
			batch = subset(batch, a.Retry)
			lastErr = &StatusError{Status: status, Body: a.Error, Path: h.path()}
			if len(batch) == 0 {
				return nil, nil
			}
		case retryStatus(status):
			lastErr = &StatusError{Status: status, Body: strings.TrimSpace(string(body)), Path: h.path()}
		default:
			return batch, &StatusError{Status: status, Body: strings.TrimSpace(string(body)), Path: h.path()}
		}
		if attempt >= h.attempts {
			return batch, fmt.Errorf("producer: gave up after %d requests: %w", attempt, lastErr)
		}
		if err := backoff.Sleep(ctx, h.wait(header, attempt)); err != nil {
			return batch, fmt.Errorf("producer: %w (after %v)", err, lastErr)
		}
	}
}

func retryStatus(status int) bool {
	switch status {
	case http.StatusTooManyRequests, http.StatusServiceUnavailable, http.StatusInternalServerError,
		http.StatusBadGateway, http.StatusGatewayTimeout:
		return true
	}
	return false
}

// add counts a's accepted events and its rejections, by their index in
// Send's events.
func (r *Result) add(batch []pending, a answer) {
	r.Accepted += a.Accepted
	for _, x := range a.Rejected {
		if x.Index >= 0 && x.Index < len(batch) {
			x.Index = batch[x.Index].index
			r.Rejected = append(r.Rejected, x)
		}
	}
}

// subset is the events of batch at the answer's retry indexes.
func subset(batch []pending, retry []Rejection) []pending {
	var out []pending
	for _, x := range retry {
		if x.Index >= 0 && x.Index < len(batch) {
			out = append(out, batch[x.Index])
		}
	}
	return out
}

// wait is how long to wait before attempt+1: Retry-After (seconds or an
// HTTP date), capped, or jittered back-off.
func (h *HTTP) wait(header http.Header, attempt int) time.Duration {
	if v := header.Get("Retry-After"); v != "" {
		if s, err := strconv.Atoi(v); err == nil && s >= 0 {
			return min(time.Duration(s)*time.Second, h.maxWait)
		}
		if t, err := http.ParseTime(v); err == nil {
			return min(max(time.Until(t), 0), h.maxWait)
		}
	}
	return h.backoff.Wait(attempt)
}

// post makes one request of batch, signed when a signer is set.
func (h *HTTP) post(ctx context.Context, batch []pending) (int, http.Header, []byte, error) {
	var body bytes.Buffer
	body.WriteByte('[')
	for i, p := range batch {
		if i > 0 {
			body.WriteByte(',')
		}
		body.Write(p.event.data)
	}
	body.WriteByte(']')
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.url, bytes.NewReader(body.Bytes()))
	if err != nil {
		return 0, nil, nil, fmt.Errorf("producer: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	if h.signer != nil {
		if err := h.signer.Sign(ctx, req, body.Bytes()); err != nil {
			return 0, nil, nil, err
		}
	}
	resp, err := h.client.Do(req)
	if err != nil {
		return 0, nil, nil, fmt.Errorf("producer: POST /v1/events: %w", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return 0, nil, nil, fmt.Errorf("producer: read answer: %w", err)
	}
	return resp.StatusCode, resp.Header, b, nil
}
