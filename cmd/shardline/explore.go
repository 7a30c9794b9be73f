package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"

	"github.com/shardline/shardline/internal/tenant"
	"github.com/shardline/shardline/ops/explorer"
)

// exploreHelp is what "shardline explore -h" prints before the flags.
const exploreHelp = `usage: shardline explore -api URL [flags]

Serves the explorer (the page make run serves at /) on this machine, and
forwards the page's API calls to a deployed shardline API, each signed with
SigV4 for execute-api with your AWS credentials, found as the AWS SDKs find
them: AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, AWS_PROFILE (SSO included),
~/.aws, a container or instance role. They need execute-api:Invoke on the
API's GET routes. Nothing is exposed: it listens on a loopback address only,
answers only requests addressed to localhost, from its own page, and
forwards only GET and HEAD (the page only reads; anything else is a 405).

The region is -region, else the one in the API's URL
(https://<id>.execute-api.<region>.amazonaws.com), else your AWS
configuration's.

examples:
  shardline explore -api https://abc123.execute-api.eu-west-1.amazonaws.com
  AWS_PROFILE=ops shardline explore -api "$API_URL" -addr 127.0.0.1:9090
                     (API_URL: the stack's output ApiUrl)

flags:
`

// exploreOptions configure serveExplorer.
type exploreOptions struct {
	API, Addr, Region string
	Tenant            string           // read the tenant's routes
	OnServing         func(url string) // called once the page is served (for tests)
}

// explore serves the explorer in front of a deployed API.
func explore(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("shardline explore", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o exploreOptions
	fs.StringVar(&o.API, "api", "", "the deployed API's URL (the stack's output ApiUrl); required")
	fs.StringVar(&o.Addr, "addr", "127.0.0.1:8080", "loopback address to serve the page on")
	fs.StringVar(&o.Region, "region", "", "the API's region (default: from the URL, else your AWS configuration)")
	fs.StringVar(&o.Tenant, "tenant", "", "read the tenant's routes, /v1/tenants/NAME/...: only its sources (default: the /v1/... routes)")
	fs.Usage = func() {
		fmt.Fprint(stderr, exploreHelp)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("explore takes no arguments, got %q", fs.Args())
	}
	if o.API == "" {
		fs.Usage()
		return errors.New("explore: -api is required")
	}
	if o.Tenant != "" {
		if err := tenant.ValidName(o.Tenant); err != nil {
			return fmt.Errorf("explore: -tenant: %w", err)
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return serveExplorer(ctx, o, stdout)
}

// serveExplorer serves the page and the signing proxy on o.Addr until ctx
// is done.
func serveExplorer(ctx context.Context, o exploreOptions, out io.Writer) error {
	target, err := apiURL(o.API)
	if err != nil {
		return err
	}
	if err := loopbackAddr(o.Addr); err != nil {
		return err
	}
	var opts []func(*config.LoadOptions) error
	region := o.Region
	if region == "" {
		region = regionOf(target.Host)
	}
	if region != "" {
		opts = append(opts, config.WithRegion(region))
	}
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return fmt.Errorf("explore: load the AWS configuration: %w", err)
	}
	if cfg.Region == "" {
		return errors.New("explore: no region: pass -region, or set AWS_REGION")
	}
	creds, err := cfg.Credentials.Retrieve(ctx)
	if err != nil {
		return fmt.Errorf("explore: AWS credentials (the SDK's default chain): %w", err)
	}
	proxy := &explorer.Proxy{Target: target, Credentials: aws.NewCredentialsCache(cfg.Credentials), Region: cfg.Region, Tenant: o.Tenant}

	ln, err := net.Listen("tcp", o.Addr)
	if err != nil {
		return fmt.Errorf("explore: listen on %s (choose another with -addr): %w", o.Addr, err)
	}
	srv := &http.Server{Handler: explorer.With(proxy), ReadHeaderTimeout: 10 * time.Second}
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()
	defer srv.Close()
	base := "http://" + ln.Addr().String()
	fmt.Fprintf(out, "the explorer for %s (%s), signed with credentials from %s:\n  %s/\nserving until Ctrl-C\n",
		target, cfg.Region, creds.Source, base)
	if o.OnServing != nil {
		o.OnServing(base)
	}
	select {
	case <-ctx.Done():
		return nil
	case err := <-serveErr:
		return fmt.Errorf("explore: serve: %w", err)
	}
}

// apiURL checks the API's URL: https, or http to this machine (a local
// stand-in); no query or fragment.
func apiURL(s string) (*url.URL, error) {
	u, err := url.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("explore: -api: %w", err)
	}
	switch {
	case u.Host == "":
		return nil, fmt.Errorf("explore: -api %q: want a URL such as https://<id>.execute-api.<region>.amazonaws.com", s)
	case u.Scheme != "https" && !(u.Scheme == "http" && explorer.Loopback(u.Hostname())):
		return nil, fmt.Errorf("explore: -api %q: want https (http only to this machine)", s)
	case u.RawQuery != "" || u.Fragment != "":
		return nil, fmt.Errorf("explore: -api %q: want no query or fragment", s)
	}
	return u, nil
}

// loopbackAddr refuses to serve on anything but a loopback address: the
// page's API calls are signed with the operator's credentials.
func loopbackAddr(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("explore: -addr %q: %w", addr, err)
	}
	if !explorer.Loopback(host) {
		return fmt.Errorf("explore: -addr %q: the explorer signs with your credentials, so it listens only on a loopback address (127.0.0.1, [::1], localhost)", addr)
	}
	return nil
}

// regionOf is the region in an execute-api host name
// (<id>.execute-api.<region>.amazonaws.com), or "".
func regionOf(host string) string {
	parts := strings.Split(strings.ToLower(host), ".")
	if len(parts) >= 5 && parts[1] == "execute-api" && parts[3] == "amazonaws" {
		return parts[2]
	}
	return ""
}
