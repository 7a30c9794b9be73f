package explorer

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/credentials"
)

// upstream records what reached the API.
type upstream struct {
	req  *http.Request
	body string
}

func proxyFor(t *testing.T) (*Proxy, *upstream) {
	t.Helper()
	got := &upstream{}
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got.req, got.body = r, string(b)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Retry-After", "3")
		w.Header().Set("Set-Cookie", "not=forwarded")
		w.WriteHeader(http.StatusServiceUnavailable)
		io.WriteString(w, `{"error":"busy"}`)
	}))
	t.Cleanup(api.Close)
	target, _ := url.Parse(api.URL + "/stage")
	return &Proxy{
		Target:      target,
		Credentials: credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "test-secret", ""),
		Region:      "eu-test-1",
	}, got
}

// TestProxyForwardsSigned: path (under the target's), query and the API's
// answer pass through; the browser's own headers do not.
func TestProxyForwardsSigned(t *testing.T) {
	p, got := proxyFor(t)
	req := httptest.NewRequest("GET", "http://127.0.0.1:8080/v1/events?source=a%2Bb%20c&x=%23", nil)
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Cookie", "session=secret")
	req.Header.Set("Origin", "http://127.0.0.1:8080")
	rec := httptest.NewRecorder()
	p.ServeHTTP(rec, req)
	if rec.Code != 503 || rec.Body.String() != `{"error":"busy"}` || rec.Header().Get("Retry-After") != "3" || rec.Header().Get("Set-Cookie") != "" {
		t.Fatalf("answer: %d %v %s", rec.Code, rec.Header(), rec.Body)
	}
	r := got.req
	if r.Method != "GET" || r.URL.Path != "/stage/v1/events" || r.URL.Query().Get("source") != "a+b c" || r.URL.Query().Get("x") != "#" || got.body != "" {
		t.Fatalf("forwarded %s %s %q %q", r.Method, r.URL.Path, r.URL.RawQuery, got.body)
	}
	auth := r.Header.Get("Authorization")
	if !strings.HasPrefix(auth, "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/") || !strings.Contains(auth, "/eu-test-1/execute-api/aws4_request") {
		t.Fatalf("Authorization: %q", auth)
	}
	if r.Header.Get("Cookie") != "" || r.Header.Get("Origin") != "" || r.Header.Get("Accept") != "application/json" {
		t.Fatalf("forwarded headers: %v", r.Header)
	}
}

// TestProxyOnlyReads: the page only reads, so the proxy signs only GET and
// HEAD; any other method is answered 405 with an Allow header, and nothing
// reaches the API signed with the operator's credentials.
func TestProxyOnlyReads(t *testing.T) {
	p, got := proxyFor(t)
	for _, m := range []string{"POST", "PUT", "DELETE", "PATCH", "OPTIONS", "TRACE"} {
		req := httptest.NewRequest(m, "http://127.0.0.1:8080/v1/events?source=s", strings.NewReader(`{"id":"1"}`))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		p.ServeHTTP(rec, req)
		if rec.Code != http.StatusMethodNotAllowed || rec.Header().Get("Allow") != "GET, HEAD" ||
			!strings.Contains(rec.Body.String(), "only reads") || got.req != nil {
			t.Errorf("%s: %d Allow %q %s (forwarded: %v)", m, rec.Code, rec.Header().Get("Allow"), rec.Body, got.req != nil)
		}
	}
	req := httptest.NewRequest("HEAD", "http://127.0.0.1:8080/v1/sources", nil)
	rec := httptest.NewRecorder()
	p.ServeHTTP(rec, req)
	if got.req == nil || got.req.Method != "HEAD" || got.req.Header.Get("Authorization") == "" {
		t.Fatalf("HEAD was not forwarded signed: %d %v", rec.Code, got.req)
	}
}

// TestProxyRefusesOthers: a request for another host name (DNS
// rebinding), from another origin's page, or outside /v1/ is not forwarded.
func TestProxyRefusesOthers(t *testing.T) {
	p, got := proxyFor(t)
	for _, c := range []struct {
		url    string
		header []string
		status int
	}{
		{"http://evil.example:8080/v1/events", nil, 403},
		{"http://127.0.0.1:8080/v1/events", []string{"Origin", "http://evil.example"}, 403},
		{"http://127.0.0.1:8080/v1/events", []string{"Sec-Fetch-Site", "cross-site"}, 403},
		{"http://127.0.0.1:8080/other", nil, 404},
	} {
		req := httptest.NewRequest("GET", c.url, nil)
		for i := 0; i+1 < len(c.header); i += 2 {
			req.Header.Set(c.header[i], c.header[i+1])
		}
		rec := httptest.NewRecorder()
		p.ServeHTTP(rec, req)
		if rec.Code != c.status || got.req != nil {
			t.Errorf("GET %s %v: %d %s (forwarded: %v)", c.url, c.header, rec.Code, rec.Body, got.req != nil)
		}
	}
	for host, want := range map[string]bool{"localhost": true, "127.0.0.1": true, "127.1.2.3": true, "[::1]": true, "::1": true,
		"0.0.0.0": false, "10.0.0.1": false, "localhost.example": false} {
		if Loopback(host) != want {
			t.Errorf("Loopback(%q) = %v", host, !want)
		}
	}
}
