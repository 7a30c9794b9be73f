// Package faultproxy is an HTTP proxy for tests that sits between the real
// AWS SDK and DynamoDB Local and injects the faults DynamoDB Local cannot
// produce: throttling and server errors, BatchWriteItem requests that are
// only partly processed, and BatchGetItem answers that miss an item (as an
// eventually consistent read may) or leave keys unprocessed. The SDK's real
// retry logic and shardline's own back-off run against it.
//
// It fronts kinesalite the same way (kinesis.go): whole requests answered
// with a fault in Kinesis's shape, and PutRecords requests whose chosen
// entries fail (FailedRecordCount, per-entry ErrorCode) while the others
// are stored, which kinesalite never does on its own.
package faultproxy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shardline/shardline/internal/ddbclient"
)

// Fault is an error answer in DynamoDB's JSON protocol.
type Fault struct {
	Status int    // HTTP status: 400 for throttling, 500 for server errors
	Code   string // such as "ProvisionedThroughputExceededException"
}

// Common faults.
var (
	Throttled     = &Fault{400, "ProvisionedThroughputExceededException"}
	Throttling    = &Fault{400, "ThrottlingException"}
	LimitExceeded = &Fault{400, "RequestLimitExceeded"}
	ServerError   = &Fault{500, "InternalServerError"}
	// Reset forwards the request, so DynamoDB acts on it, then cuts the
	// connection halfway through the answer: the caller cannot know whether
	// its write happened.
	Reset = &Fault{0, "connection reset"}
)

// Request is what a Rule sees of one request.
type Request struct {
	Op   string // the DynamoDB operation, such as "BatchWriteItem"
	Body []byte
	N    int64 // 1 for the first request of this Op through the proxy, and so on

	// meter is how the partition model (Partitions) asks the proxy for
	// what a Rule's two answers cannot say; nil outside the proxy.
	meter *meter
}

// meter is what a Rule asked of the proxy besides its answer.
type meter struct {
	// refuseWhole: a BatchWriteItem whose every write request is held is
	// answered ProvisionedThroughputExceededException, as DynamoDB
	// answers one of which nothing could be written, rather than 200 with
	// all of it unprocessed.
	refuseWhole bool
	// consumed, when set, is given the answer of the forwarded request,
	// which the proxy asks to report its consumed capacity per index.
	consumed func(status int, body []byte)
	// keysUnprocessed: a BatchGetItem's Hold picks keys to answer
	// unprocessed (Request.HoldKeysUnprocessed).
	keysUnprocessed bool
}

// Rule decides the fate of a request. Returning a Fault answers with it;
// returning a non-nil Hold forwards only the write requests of a
// BatchWriteItem it does not hold and answers the held ones as
// UnprocessedItems, or leaves the items it holds out of an eventually
// consistent BatchGetItem's answer (stale.go), or, when the Rule called
// Request.HoldKeysUnprocessed, answers the keys it holds as a
// BatchGetItem's UnprocessedKeys (unprocessed.go); returning neither forwards
// the request untouched.
type Rule func(Request) (*Fault, Hold)

// Hold picks write requests to leave unprocessed, by their item (a
// PutRequest) or their key (a DeleteRequest), or items read to leave out,
// as DynamoDB JSON.
type Hold func(item map[string]json.RawMessage) bool

// Proxy is a running fault-injecting proxy.
type Proxy struct {
	URL string // point the SDK's endpoint here

	srv    *httptest.Server
	target *url.URL
	mu     sync.Mutex
	rule   Rule
	counts sync.Map // op -> *atomic.Int64

	Faults atomic.Int64 // requests answered with a Fault
	Held   atomic.Int64 // write requests returned unprocessed, items left out of a read
	// EntriesFailed counts PutRecords entries answered with an injected
	// ErrorCode (SetEntryFault).
	EntriesFailed atomic.Int64

	entryFault EntryFault // guarded by mu

	latency     atomic.Int64 // added to every request, in nanoseconds
	inFlight    atomic.Int64
	maxInFlight atomic.Int64
}

// SetLatency delays every request by d before it is answered.
func (p *Proxy) SetLatency(d time.Duration) { p.latency.Store(int64(d)) }

// MaxInFlight is the most requests the proxy has had under way at once.
func (p *Proxy) MaxInFlight() int64 { return p.maxInFlight.Load() }

// For is New for a test: it fails t when the proxy cannot start, and
// closes the proxy when t ends.
func For(t testing.TB, target string) *Proxy {
	t.Helper()
	p, err := New(target)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// New starts a proxy in front of target (DynamoDB Local's endpoint).
func New(target string) (*Proxy, error) {
	// The target's user name names a database of DynamoDB Local
	// (ddbclient.Local): the proxy's URL carries it to the clients made of
	// it, whose requests are signed with it; the proxy sends to the host.
	base, key := ddbclient.Local(target)
	u, err := url.Parse(base)
	if err != nil {
		return nil, fmt.Errorf("faultproxy: target %q: %w", target, err)
	}
	p := &Proxy{target: u}
	p.srv = httptest.NewServer(http.HandlerFunc(p.serve))
	p.URL = p.srv.URL
	if base != target {
		if p.URL, err = ddbclient.WithKey(p.srv.URL, key); err != nil {
			p.srv.Close()
			return nil, fmt.Errorf("faultproxy: %w", err)
		}
	}
	return p, nil
}

// Count is how many requests of op (such as "UpdateItem") reached the
// proxy, answered with a fault or not.
func (p *Proxy) Count(op string) int64 {
	if n, ok := p.counts.Load(op); ok {
		return n.(*atomic.Int64).Load()
	}
	return 0
}

// SetRule replaces the rule; nil forwards everything.
func (p *Proxy) SetRule(r Rule) {
	p.mu.Lock()
	p.rule = r
	p.mu.Unlock()
}

// Close stops the proxy.
func (p *Proxy) Close() { p.srv.Close() }

func (p *Proxy) serve(w http.ResponseWriter, r *http.Request) {
	n := p.inFlight.Add(1)
	defer p.inFlight.Add(-1)
	for {
		m := p.maxInFlight.Load()
		if n <= m || p.maxInFlight.CompareAndSwap(m, n) {
			break
		}
	}
	if d := time.Duration(p.latency.Load()); d > 0 {
		select {
		case <-time.After(d):
		case <-r.Context().Done():
			return
		}
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	op := r.Header.Get("X-Amz-Target")
	if i := strings.LastIndexByte(op, '.'); i >= 0 {
		op = op[i+1:]
	}
	c, _ := p.counts.LoadOrStore(op, new(atomic.Int64))
	count := c.(*atomic.Int64).Add(1)
	p.mu.Lock()
	rule, entryFault := p.rule, p.entryFault
	p.mu.Unlock()
	var fault *Fault
	var hold Hold
	m := &meter{}
	if rule != nil {
		fault, hold = rule(Request{Op: op, Body: body, N: count, meter: m})
	}
	if fault == Reset {
		p.Faults.Add(1)
		p.resetAfterForward(w, r, body)
		return
	}
	if fault != nil && isKinesis(r) {
		p.Faults.Add(1)
		writeKinesisFault(w, fault)
		return
	}
	if fault != nil {
		p.Faults.Add(1)
		writeFault(w, fault)
		return
	}
	if hold != nil && op == "BatchWriteItem" {
		p.partial(w, r, body, hold, m.refuseWhole)
		return
	}
	if hold != nil && op == "BatchGetItem" && m.keysUnprocessed {
		p.unprocessed(w, r, body, hold)
		return
	}
	if hold != nil && op == "BatchGetItem" {
		p.stale(w, r, body, hold)
		return
	}
	if entryFault != nil && op == "PutRecords" && isKinesis(r) {
		p.putRecords(w, r, body, count, entryFault)
		return
	}
	if m.consumed != nil {
		p.metered(w, r, body, m.consumed)
		return
	}
	p.forward(w, r, body, nil)
}

// writeFault answers with a fault in DynamoDB's JSON protocol.
func writeFault(w http.ResponseWriter, f *Fault) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	w.WriteHeader(f.Status)
	fmt.Fprintf(w, `{"__type":"com.amazonaws.dynamodb.v20120810#%s","message":"injected by faultproxy"}`, f.Code)
}

// metered forwards a single-item write asking DynamoDB for its consumed
// capacity per index, and gives the answer to consumed. The answer goes
// back unchanged: a caller that did not ask for the capacity ignores it.
func (p *Proxy) metered(w http.ResponseWriter, r *http.Request, body []byte, consumed func(int, []byte)) {
	var in map[string]json.RawMessage
	if json.Unmarshal(body, &in) == nil {
		in["ReturnConsumedCapacity"] = json.RawMessage(`"INDEXES"`)
		if b, err := json.Marshal(in); err == nil {
			body = b
		}
	}
	p.forwardObserved(w, r, body, nil, consumed)
}

// forward sends the request on; rewrite, when set, may change the response
// body (and then the CRC header, which would no longer match, is dropped).
func (p *Proxy) forward(w http.ResponseWriter, r *http.Request, body []byte, rewrite func([]byte) []byte) {
	p.forwardObserved(w, r, body, rewrite, nil)
}

// forwardObserved is forward that also shows observe the answer's status
// and body, as they go back to the caller.
func (p *Proxy) forwardObserved(w http.ResponseWriter, r *http.Request, body []byte, rewrite func([]byte) []byte, observe func(int, []byte)) {
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(p.target)
			pr.Out.Host = p.target.Host
		},
		// A client that gives up mid-request (a deadline test) is expected.
		ErrorLog: log.New(io.Discard, "", 0),
	}
	if rewrite != nil || observe != nil {
		rp.ModifyResponse = func(resp *http.Response) error {
			b, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil {
				return err
			}
			if observe != nil {
				observe(resp.StatusCode, b)
			}
			if rewrite != nil && resp.StatusCode == http.StatusOK {
				b = rewrite(b)
				resp.Header.Del("X-Amz-Crc32")
			}
			resp.Body = io.NopCloser(bytes.NewReader(b))
			resp.ContentLength = int64(len(b))
			resp.Header.Set("Content-Length", fmt.Sprint(len(b)))
			return nil
		}
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	rp.ServeHTTP(w, r)
}

// resetAfterForward sends the request on, reads the whole answer, then
// writes half of it and closes the connection.
func (p *Proxy) resetAfterForward(w http.ResponseWriter, r *http.Request, body []byte) {
	out, err := http.NewRequestWithContext(r.Context(), r.Method, p.target.String()+r.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	out.Header = r.Header.Clone()
	resp, err := http.DefaultTransport.RoundTrip(out)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	answer, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	conn, buf, err := w.(http.Hijacker).Hijack()
	if err != nil {
		return
	}
	defer conn.Close()
	fmt.Fprintf(buf, "HTTP/1.1 %d %s\r\nContent-Type: application/x-amz-json-1.0\r\nContent-Length: %d\r\n\r\n",
		resp.StatusCode, http.StatusText(resp.StatusCode), len(answer))
	buf.Write(answer[:len(answer)/2])
	buf.Flush()
}

// Mix is a fault mix: each request draws at most one fault, with these
// probabilities. Partial applies to BatchWriteItem requests that drew no
// fault: each of their write requests is then held back with probability
// one half.
type Mix struct {
	Seed                                                     uint64
	Throttled, Throttling, LimitExceeded, ServerError, Reset float64
	Partial                                                  float64
}

// Rule turns the mix into a Rule, deterministic for a seed and a sequence
// of requests.
func (m Mix) Rule() Rule {
	var mu sync.Mutex
	r := rand.New(rand.NewPCG(m.Seed, m.Seed^0x9e3779b97f4a7c15))
	draw := func() float64 {
		mu.Lock()
		defer mu.Unlock()
		return r.Float64()
	}
	return func(req Request) (*Fault, Hold) {
		x := draw()
		for _, f := range []struct {
			p     float64
			fault *Fault
		}{{m.Throttled, Throttled}, {m.Throttling, Throttling}, {m.LimitExceeded, LimitExceeded}, {m.ServerError, ServerError}, {m.Reset, Reset}} {
			if x < f.p {
				return f.fault, nil
			}
			x -= f.p
		}
		if req.Op == "BatchWriteItem" && draw() < m.Partial {
			return nil, func(map[string]json.RawMessage) bool { return draw() < 0.5 }
		}
		return nil, nil
	}
}

// PKHasPrefix is a Hold that picks items whose partition key starts with
// prefix.
func PKHasPrefix(prefix string) Hold {
	return func(item map[string]json.RawMessage) bool {
		var pk struct{ S string }
		return json.Unmarshal(item["pk"], &pk) == nil && strings.HasPrefix(pk.S, prefix)
	}
}
