package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"

	"github.com/shardline/shardline/internal/apigw"
	"github.com/shardline/shardline/internal/backoff"
	"github.com/shardline/shardline/internal/tenant"
	"github.com/shardline/shardline/pkg/producer"
)

// defaultAPI is make run's API.
const defaultAPI = "http://127.0.0.1:8080"

// envAPI names the variable that sets the default of -api.
const envAPI = "SHARDLINE_API"

// apiHelp is what the API commands' -h says of -api and -sign.
const apiHelp = `The API: -api URL, default $SHARDLINE_API or ` + defaultAPI + ` (make run's).
A deployed API is the stack's ApiUrl output. Requests are signed with SigV4
for API Gateway (service execute-api), with the AWS SDK's default
credentials and region (AWS_PROFILE, AWS_REGION, ...; for
https://ID.execute-api.REGION.amazonaws.com the region is the URL's when
none is configured), unless the API is on this machine (localhost,
127.0.0.0/8, ::1), which make run serves without IAM: -sign auto. -sign
always or never forces either way. The credentials need execute-api:Invoke
on the route.
`

// apiFlags are the flags every command of the HTTP API takes.
type apiFlags struct {
	url    string
	sign   string
	tenant string
}

func (a *apiFlags) register(fs *flag.FlagSet) {
	def := os.Getenv(envAPI)
	if def == "" {
		def = defaultAPI
	}
	fs.StringVar(&a.url, "api", def, "base URL of the API (default $"+envAPI+" or make run's)")
	fs.StringVar(&a.sign, "sign", "auto", "sign requests with SigV4: auto (unless the API is on this machine), always or never")
	fs.StringVar(&a.tenant, "tenant", "", "use the tenant's routes, /v1/tenants/NAME/...: only its sources (default: the /v1/... routes)")
}

// apiClient makes requests of the API, signed or not.
type apiClient struct {
	base   string
	tenant string // the routes are this tenant's, when not empty
	http   *http.Client
	creds  aws.CredentialsProvider // nil: unsigned
	region string                  // when signed
}

// client checks the flags and makes the client: with credentials and a
// region from the SDK's default chain when it signs.
func (a *apiFlags) client(ctx context.Context) (*apiClient, error) {
	u, err := url.Parse(a.url)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("-api %q: want the API's base URL, such as %s or https://ID.execute-api.REGION.amazonaws.com", a.url, defaultAPI)
	}
	sign, err := shouldSign(u, a.sign)
	if err != nil {
		return nil, err
	}
	if a.tenant != "" {
		if err := tenant.ValidName(a.tenant); err != nil {
			return nil, fmt.Errorf("-tenant: %w", err)
		}
	}
	c := &apiClient{base: strings.TrimRight(a.url, "/"), tenant: a.tenant, http: &http.Client{Timeout: 60 * time.Second}}
	if !sign {
		return c, nil
	}
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("load AWS configuration to sign requests to %s: %w", u.Host, err)
	}
	c.region = cfg.Region
	if c.region == "" {
		c.region = regionOf(u.Hostname())
	}
	if c.region == "" {
		return nil, fmt.Errorf("signing requests to %s needs a region: set AWS_REGION (or a profile's region), or -sign never for an API without IAM authorization", u.Host)
	}
	if _, err := cfg.Credentials.Retrieve(ctx); err != nil {
		return nil, fmt.Errorf("signing requests to %s needs AWS credentials, and the SDK's default chain found none (%v): set AWS_PROFILE or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or -sign never for an API without IAM authorization", u.Host, err)
	}
	c.creds = cfg.Credentials
	c.http.Transport = producer.NewSigner(c.creds, c.region).Transport(nil)
	return c, nil
}

// shouldSign decides -sign: auto signs unless the API is on this machine.
func shouldSign(u *url.URL, mode string) (bool, error) {
	switch mode {
	case "always":
		return true, nil
	case "never":
		return false, nil
	case "auto":
		return !isLoopback(u.Hostname()), nil
	}
	return false, fmt.Errorf("-sign %q: want auto, always or never", mode)
}

func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") || strings.HasSuffix(strings.ToLower(host), ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// producer is an HTTP producer of the API, signed as the client is.
func (c *apiClient) producer() *producer.HTTP {
	opts := []producer.HTTPOption{producer.WithHTTPClient(&http.Client{Timeout: 60 * time.Second})}
	if c.creds != nil {
		opts = append(opts, producer.WithSigner(c.creds, c.region))
	}
	if c.tenant != "" {
		opts = append(opts, producer.WithTenant(c.tenant))
	}
	return producer.NewHTTP(c.base, opts...)
}

// route is the path of route ("/v1/events") for the client: the tenant's
// (/v1/tenants/NAME/events) with -tenant.
func (c *apiClient) route(route string) string {
	if c.tenant == "" {
		return route
	}
	return apigw.TenantsPath + c.tenant + strings.TrimPrefix(route, "/v1")
}

// apiError is an answer other than 200.
type apiError struct {
	method, route string
	status        int
	message       string
}

func (e *apiError) Error() string {
	msg := fmt.Sprintf("%s %s: %d %s", e.method, e.route, e.status, http.StatusText(e.status))
	if e.message != "" {
		msg += ": " + e.message
	}
	switch e.status {
	case http.StatusForbidden, http.StatusUnauthorized:
		if strings.Contains(e.message, "is not a source of tenant") {
			msg += " (a tenant's routes take only the tenant's sources: check -tenant and the events' source)"
			break
		}
		msg += " (the API refused the request's signature or credentials: check -sign, AWS_REGION, and that the credentials may execute-api:Invoke the route)"
	case http.StatusNotFound:
		msg += " (is -api the API's base URL, without a path?)"
	}
	return msg
}

// getAttempts is how often get asks when the API answers 503 or 429.
const getAttempts = 5

// get asks route with q and decodes a 200's body into v. A 503 or 429 is
// asked again, after Retry-After (at most 30 s) or a second.
func (c *apiClient) get(ctx context.Context, route string, q url.Values, v any) error {
	route = c.route(route)
	u := c.base + route
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	for attempt := 1; ; attempt++ {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			return fmt.Errorf("GET %s: %w", route, err)
		}
		resp, err := c.http.Do(req)
		if err != nil {
			return fmt.Errorf("GET %s: %w (is the API at %s? make run serves one at %s)", route, err, c.base, defaultAPI)
		}
		body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
		resp.Body.Close()
		if err != nil {
			return fmt.Errorf("GET %s: read the answer: %w", route, err)
		}
		if resp.StatusCode == http.StatusOK {
			if err := json.Unmarshal(body, v); err != nil {
				return fmt.Errorf("GET %s: the answer is not what the API sends: %w", route, err)
			}
			return nil
		}
		e := &apiError{method: "GET", route: route, status: resp.StatusCode, message: errorMessage(body)}
		retry := resp.StatusCode == http.StatusServiceUnavailable || resp.StatusCode == http.StatusTooManyRequests
		if !retry || attempt == getAttempts {
			return e
		}
		wait := time.Second
		if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s >= 0 {
			wait = min(time.Duration(s)*time.Second, 30*time.Second)
		}
		if err := backoff.Sleep(ctx, wait); err != nil {
			return errors.Join(err, e)
		}
	}
}

// errorMessage is the error an answer's body gives: {"error": ...} from
// shardline, {"message": ...} from API Gateway, or the body itself.
func errorMessage(body []byte) string {
	var e struct{ Error, Message string }
	if json.Unmarshal(body, &e) == nil {
		if e.Error != "" {
			return e.Error
		}
		if e.Message != "" {
			return e.Message
		}
	}
	return strings.TrimSpace(string(body[:min(len(body), 500)]))
}

// timeFlag turns a -from or -to value into the API's: a Go duration such
// as 15m or 2h30m is that long before now; anything else (RFC 3339, epoch
// milliseconds) goes as it is, for the API to check.
func timeFlag(v string, now time.Time) string {
	if v == "" {
		return ""
	}
	if d, err := time.ParseDuration(v); err == nil && d >= 0 {
		return now.Add(-d).UTC().Format(time.RFC3339Nano)
	}
	return v
}

// commandFlags is the flag set of command name: its errors go to stderr,
// and -h prints help and then the flags.
func commandFlags(name, help string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("shardline "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, help)
		fs.PrintDefaults()
	}
	return fs
}

// parseFlagsOnly parses args into fs, whose command takes flags and no
// arguments.
func parseFlagsOnly(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%s takes no arguments, got %q; flags go before anything else", strings.TrimPrefix(fs.Name(), "shardline "), fs.Args())
	}
	return nil
}

// interruptible is a context that Ctrl-C or SIGTERM ends, for commands
// that run until told to stop.
func interruptible() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}
