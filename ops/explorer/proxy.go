package explorer

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// Service is the SigV4 service name of API Gateway's APIs.
const Service = "execute-api"

// Methods are the methods the proxy forwards, as an Allow header lists
// them: the page only reads, and anything else would be signed with the
// operator's credentials on behalf of whatever sent it.
const Methods = "GET, HEAD"

// forwarded are the request headers the proxy passes on (and signs); the
// browser's others (cookies, Sec-Fetch-*, the page's Origin) are not the
// API's business.
var forwarded = []string{"Accept"}

// answered are the API's answer headers the proxy passes back.
var answered = []string{"Content-Type", "Retry-After", "Allow"}

// Proxy forwards the page's API calls (GET and HEAD of paths under /v1/)
// to a deployed API, each signed with SigV4 for execute-api, without a
// body; any other method is answered 405. It answers only requests
// addressed to a loopback host, so that a web page elsewhere cannot reach
// it through DNS rebinding, and refuses requests another origin's page sent.
type Proxy struct {
	Target      *url.URL                // the API's base URL (the stack's ApiUrl)
	Credentials aws.CredentialsProvider // the operator's, from the SDK's chain
	Region      string                  // the API's region
	Signer      *v4.Signer              // nil: v4.NewSigner()
	Client      *http.Client            // nil: a client with a 35 s timeout
	Now         func() time.Time        // the signing time; nil: time.Now
	// Tenant, when set, sends the page's reads to the tenant's routes:
	// /v1/events is asked as /v1/tenants/<Tenant>/events, and so on.
	Tenant string
}

// ServeHTTP forwards r, signed, and writes the API's answer.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !strings.HasPrefix(r.URL.Path, "/v1/") {
		http.NotFound(w, r)
		return
	}
	if err := local(r); err != nil {
		writeError(w, http.StatusForbidden, err.Error())
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", Methods)
		writeError(w, http.StatusMethodNotAllowed, fmt.Sprintf("%s: the explorer only reads (%s); send anything else to the API with a client of your own", r.Method, Methods))
		return
	}
	out, err := p.signed(r.Context(), r)
	if err != nil {
		writeError(w, http.StatusBadGateway, err.Error())
		return
	}
	resp, err := p.client().Do(out)
	if err != nil {
		writeError(w, http.StatusBadGateway, fmt.Sprintf("the API at %s: %v", p.Target.Host, err))
		return
	}
	defer resp.Body.Close()
	for _, k := range answered {
		if v := resp.Header.Get(k); v != "" {
			w.Header().Set(k, v)
		}
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = io.Copy(w, resp.Body)
}

// route is the API's path for the page's path ("/v1/..."): the tenant's
// route with Tenant.
func (p *Proxy) route(path string) string {
	if p.Tenant == "" {
		return path
	}
	return "/v1/tenants/" + p.Tenant + strings.TrimPrefix(path, "/v1")
}

// signed is r as a request to the API, signed for execute-api: the same
// method, path (under the target's) and query, and no body.
func (p *Proxy) signed(ctx context.Context, r *http.Request) (*http.Request, error) {
	u := *p.Target
	u.Path = strings.TrimSuffix(p.Target.Path, "/") + p.route(r.URL.Path)
	u.RawPath = ""
	if r.URL.RawPath != "" {
		u.RawPath = strings.TrimSuffix(p.Target.EscapedPath(), "/") + p.route(r.URL.RawPath)
	}
	u.RawQuery = r.URL.RawQuery
	u.Fragment = ""
	out, err := http.NewRequestWithContext(ctx, r.Method, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("request to the API: %w", err)
	}
	for _, k := range forwarded {
		if v := r.Header.Get(k); v != "" {
			out.Header.Set(k, v)
		}
	}
	creds, err := p.Credentials.Retrieve(ctx)
	if err != nil {
		return nil, fmt.Errorf("AWS credentials: %w", err)
	}
	sum := sha256.Sum256(nil)
	now := time.Now
	if p.Now != nil {
		now = p.Now
	}
	signer := p.Signer
	if signer == nil {
		signer = v4.NewSigner()
	}
	if err := signer.SignHTTP(ctx, creds, out, hex.EncodeToString(sum[:]), Service, p.Region, now()); err != nil {
		return nil, fmt.Errorf("sign the request: %w", err)
	}
	return out, nil
}

func (p *Proxy) client() *http.Client {
	if p.Client != nil {
		return p.Client
	}
	return defaultClient
}

// defaultClient waits a little longer than API Gateway's 30 s integration
// timeout, so the API's own 503 arrives rather than ours.
var defaultClient = &http.Client{Timeout: 35 * time.Second}

// local checks that r was addressed to this machine by name and, when a
// page sent it, by a page of this same origin.
func local(r *http.Request) error {
	host := r.Host
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	if !Loopback(host) {
		return fmt.Errorf("host %q: the explorer answers only requests to localhost", r.Host)
	}
	if o := r.Header.Get("Origin"); o != "" {
		ou, err := url.Parse(o)
		if err != nil || ou.Host != r.Host {
			return fmt.Errorf("origin %q: only the explorer's own page may call the API through it", o)
		}
	}
	if s := r.Header.Get("Sec-Fetch-Site"); s != "" && s != "same-origin" && s != "none" {
		return fmt.Errorf("Sec-Fetch-Site %q: only the explorer's own page may call the API through it", s)
	}
	return nil
}

// Loopback reports whether host (a name or an address, without a port)
// is this machine's loopback: localhost, 127.0.0.0/8 or ::1.
func Loopback(host string) bool {
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// writeError answers as the API's errors are shaped.
func writeError(w http.ResponseWriter, status int, msg string) {
	b, _ := json.Marshal(map[string]string{"error": "explorer: " + msg})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}
