package producer_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/shardline/shardline/local/devserver"
	"github.com/shardline/shardline/pkg/producer"
	"github.com/shardline/shardline/testkit/testddb"
)

// serve runs the local server (`make run`'s: the real ingest handler on
// DynamoDB Local) for the test and returns its URL.
func serve(t *testing.T) string {
	t.Helper()
	base, stop, err := devserver.Serve(context.Background(), devserver.Options{
		Addr:     "127.0.0.1:0",
		Endpoint: testddb.Endpoint(t),
		Table:    fmt.Sprintf("producer-%d", time.Now().UnixNano()),
		Getenv:   func(string) string { return "" },
		Out:      io.Discard,
	})
	if err != nil {
		t.Fatalf("devserver: %v", err)
	}
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("devserver: %v", err)
		}
	})
	return base
}

// TestHTTPLocalServer: the real ingest API stores valid events, in
// requests of at most 1,000, and Send reports the ones it refused by their
// index in Send's arguments.
func TestHTTPLocalServer(t *testing.T) {
	t.Parallel() // its own server and table; it waits on DynamoDB Local more than on the CPU
	base := serve(t)
	h := producer.NewHTTP(base)
	ctx := context.Background()
	noType := ev(1, 1)
	delete(noType, "type")
	noID := ev(0, 1)
	delete(noID, "id")
	res, err := h.Send(ctx, ev(0, 1), noType, json.RawMessage(`{"specversion":"1.0","source":"s","type":"t","data":12345678901234567890}`), noID, "not json")
	if err != nil {
		t.Fatal(err)
	}
	if res.Accepted != 3 || res.Requests != 1 || len(res.Failed) != 0 {
		t.Fatalf("result %+v", res)
	}
	slices.SortFunc(res.Rejected, func(a, b producer.Rejection) int { return a.Index - b.Index })
	if len(res.Rejected) != 2 || res.Rejected[0].Index != 1 || !strings.HasPrefix(res.Rejected[0].Error, "type:") || res.Rejected[1].Index != 4 {
		t.Fatalf("rejected %+v", res.Rejected)
	}
	uuid7 := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	if res.IDs[0] != "e-00000" || !uuid7.MatchString(res.IDs[2]) || !uuid7.MatchString(res.IDs[3]) {
		t.Fatalf("ids %q", res.IDs)
	}

	// None valid: 400, every event rejected.
	res, err = h.Send(ctx, noType, noType)
	if err != nil || res.Accepted != 0 || len(res.Rejected) != 2 {
		t.Fatalf("all invalid: %+v, %v", res, err)
	}

	// 2,500 events go in three requests; sending them again stores nothing
	// new (ids and times were set by the caller or by Send).
	many := make([]any, 2500)
	for i := range many {
		many[i] = ev(i, 10)
		many[i].(map[string]any)["time"] = time.Now().UTC().Add(-time.Minute).Format(time.RFC3339)
	}
	res, err = h.Send(ctx, many...)
	if err != nil || res.Accepted != 2500 || res.Requests != 3 || len(res.Rejected) != 0 {
		t.Fatalf("2,500 events: %+v, %v", res.Accepted, err)
	}
}

// script is an httptest server answering POST /v1/events with a scripted
// sequence, recording each request's events.
type script struct {
	mu       sync.Mutex
	answers  []func(w http.ResponseWriter, events []json.RawMessage)
	requests [][]json.RawMessage
	times    []time.Time
	headers  []http.Header
}

func (s *script) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var evs []json.RawMessage
	json.NewDecoder(r.Body).Decode(&evs)
	s.mu.Lock()
	n := len(s.requests)
	s.requests = append(s.requests, evs)
	s.times = append(s.times, time.Now())
	s.headers = append(s.headers, r.Header.Clone())
	s.mu.Unlock()
	if r.URL.Path != "/v1/events" || r.Method != http.MethodPost {
		http.Error(w, "wrong route "+r.Method+" "+r.URL.Path, http.StatusNotFound)
		return
	}
	s.answers[min(n, len(s.answers)-1)](w, evs)
}

func reply(status int, retryAfter string, body string) func(http.ResponseWriter, []json.RawMessage) {
	return func(w http.ResponseWriter, evs []json.RawMessage) {
		if retryAfter != "" {
			w.Header().Set("Retry-After", retryAfter)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		if body == "" {
			body = fmt.Sprintf(`{"accepted":%d,"rejected":[]}`, len(evs))
		}
		io.WriteString(w, body)
	}
}

func TestHTTPRetryAfter(t *testing.T) {
	s := &script{answers: []func(http.ResponseWriter, []json.RawMessage){
		// Of 4 events: #0 stored, #1 rejected, #2 and #3 to send again.
		reply(503, "1", `{"error":"storage unavailable","accepted":1,"rejected":[{"index":1,"id":"e-00001","error":"type: is required"}],"retry":[{"index":2,"id":"e-00002"},{"index":3,"id":"e-00003"}]}`),
		reply(429, "0", `{"message":"Too Many Requests"}`),
		reply(202, "", ""),
	}}
	srv := httptest.NewServer(s)
	defer srv.Close()
	h := producer.NewHTTP(srv.URL)
	res, err := h.Send(context.Background(), ev(0, 1), ev(1, 1), ev(2, 1), ev(3, 1))
	if err != nil {
		t.Fatal(err)
	}
	if res.Accepted != 3 || res.Requests != 3 || len(res.Rejected) != 1 || res.Rejected[0].Index != 1 {
		t.Fatalf("result %+v", res)
	}
	if n := []int{len(s.requests[0]), len(s.requests[1]), len(s.requests[2])}; !slices.Equal(n, []int{4, 2, 2}) {
		t.Fatalf("requests of %v events, want [4 2 2]", n)
	}
	if d := s.times[1].Sub(s.times[0]); d < time.Second {
		t.Fatalf("second request %v after the first; Retry-After said 1s", d)
	}
	if !strings.Contains(string(s.requests[1][0]), `"e-00002"`) {
		t.Fatalf("retried %s, want e-00002 first", s.requests[1][0])
	}
}

func TestHTTPRetryAfterCapped(t *testing.T) {
	s := &script{answers: []func(http.ResponseWriter, []json.RawMessage){
		reply(503, "3600", `{"error":"storage unavailable"}`),
		reply(429, time.Now().Add(time.Hour).UTC().Format(http.TimeFormat), ""),
		reply(503, "1", `{"error":"storage unavailable"}`),
	}}
	srv := httptest.NewServer(s)
	defer srv.Close()
	h := producer.NewHTTP(srv.URL, producer.WithMaxRetryAfter(20*time.Millisecond), producer.WithAttempts(3))
	// An uncapped wait (an hour) would end in the context's deadline
	// instead of the third answer.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := h.Send(ctx, ev(0, 1), ev(1, 1))
	var se *producer.StatusError
	if !errors.As(err, &se) || se.Status != 503 {
		t.Fatalf("err %v, want a 503 StatusError after 3 attempts, each Retry-After capped at 20ms", err)
	}
	if res.Requests != 3 || len(res.Failed) != 2 || res.Accepted != 0 {
		t.Fatalf("result %+v", res)
	}
	// A request the server will not take is not retried.
	s.answers = []func(http.ResponseWriter, []json.RawMessage){reply(413, "", `{"error":"body: too large"}`)}
	s.requests = nil
	if _, err := h.Send(context.Background(), ev(0, 1)); !errors.As(err, &se) || se.Status != 413 || len(s.requests) != 1 {
		t.Fatalf("413: %v after %d requests", err, len(s.requests))
	}
}

// TestHTTPSigV4: with WithSigner each request carries a SigV4 signature for
// execute-api that the SDK's signer, given the same request, reproduces;
// without it, none.
func TestHTTPSigV4(t *testing.T) {
	s := &script{answers: []func(http.ResponseWriter, []json.RawMessage){reply(202, "", "")}}
	var verified []error
	check := func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		verified = append(verified, verify(r, body))
		r.Body = io.NopCloser(strings.NewReader(string(body)))
		s.ServeHTTP(w, r)
	}
	srv := httptest.NewServer(http.HandlerFunc(check))
	defer srv.Close()
	creds := credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "secret", "session-token")
	h := producer.NewHTTP(srv.URL, producer.WithSigner(creds, "eu-west-1"))
	if _, err := h.Send(context.Background(), ev(0, 1)); err != nil {
		t.Fatal(err)
	}
	auth := s.headers[0].Get("Authorization")
	if !regexp.MustCompile(`^AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/\d{8}/eu-west-1/execute-api/aws4_request, SignedHeaders=\S*host\S*, Signature=[0-9a-f]{64}$`).MatchString(auth) {
		t.Fatalf("Authorization %q", auth)
	}
	if s.headers[0].Get("X-Amz-Security-Token") != "session-token" {
		t.Fatalf("X-Amz-Security-Token %q", s.headers[0].Get("X-Amz-Security-Token"))
	}
	if verified[0] != nil {
		t.Fatal(verified[0])
	}
	if _, err := producer.NewHTTP(srv.URL).Send(context.Background(), ev(0, 1)); err != nil {
		t.Fatal(err)
	}
	if a := s.headers[1].Get("Authorization"); a != "" {
		t.Fatalf("unsigned client sent Authorization %q", a)
	}
}

// verify signs again, with the SDK's signer, what the server received of a
// signed request (its signed headers, body and date) and compares.
func verify(r *http.Request, body []byte) error {
	auth := r.Header.Get("Authorization")
	if auth == "" {
		return nil
	}
	m := regexp.MustCompile(`SignedHeaders=([^,]+)`).FindStringSubmatch(auth)
	if m == nil {
		return fmt.Errorf("no SignedHeaders in %q", auth)
	}
	at, err := time.Parse("20060102T150405Z", r.Header.Get("X-Amz-Date"))
	if err != nil {
		return err
	}
	req, _ := http.NewRequest(r.Method, "http://"+r.Host+r.URL.RequestURI(), strings.NewReader(string(body)))
	for _, name := range strings.Split(m[1], ";") {
		if name != "host" && name != "x-amz-date" && name != "x-amz-security-token" {
			req.Header.Set(name, r.Header.Get(name))
		}
	}
	hash := fmt.Sprintf("%x", sha256sum(body))
	creds := aws.Credentials{AccessKeyID: "AKIDEXAMPLE", SecretAccessKey: "secret", SessionToken: "session-token"}
	if err := v4.NewSigner().SignHTTP(context.Background(), creds, req, hash, "execute-api", "eu-west-1", at); err != nil {
		return err
	}
	if got := req.Header.Get("Authorization"); got != auth {
		return fmt.Errorf("signature does not verify:\n got  %s\n want %s", auth, got)
	}
	return nil
}

func sha256sum(b []byte) [32]byte { return sha256.Sum256(b) }

// TestSignerTransport: a client on Signer.Transport signs every request,
// a GET with a query as a POST with a body, as the SDK's signer would, and
// leaves the caller's request unsigned.
func TestSignerTransport(t *testing.T) {
	var errs []error
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.Header.Get("Authorization") == "" {
			errs = append(errs, fmt.Errorf("%s %s unsigned", r.Method, r.URL))
		}
		if err := verify(r, body); err != nil {
			errs = append(errs, err)
		}
		fmt.Fprint(w, "{}")
	}))
	defer srv.Close()
	creds := credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "secret", "session-token")
	c := &http.Client{Transport: producer.NewSigner(creds, "eu-west-1").Transport(nil)}
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/v1/events?source=a%20b%2Fc&limit=10", nil)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if req.Header.Get("Authorization") != "" {
		t.Fatal("the caller's request was changed")
	}
	resp, err = c.Post(srv.URL+"/v1/events", "application/json", strings.NewReader(`[{"id":"1"}]`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if len(errs) > 0 {
		t.Fatal(errs)
	}
}
