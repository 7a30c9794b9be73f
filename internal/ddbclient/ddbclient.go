// Package ddbclient builds the DynamoDB client both functions use: one per
// container, with a retryer that keeps retrying throttles and a connection
// pool sized for the writer's concurrency.
package ddbclient

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// MaxAttempts is how often the SDK tries one request before it hands the
// error to the caller; the writer then backs off and retries on its own, up
// to the Lambda deadline.
const MaxAttempts = 3

// Back-off of the SDK's own retries.
const (
	BaseBackoff = 25 * time.Millisecond
	MaxBackoff  = time.Second
)

// jitter is full-jitter exponential back-off: a uniform wait below a ceiling
// that doubles each attempt.
type jitter struct{}

// BackoffDelay is a uniform wait below min(BaseBackoff << attempt, MaxBackoff).
func (jitter) BackoffDelay(attempt int, _ error) (time.Duration, error) {
	ceiling := min(BaseBackoff<<min(attempt, 20), MaxBackoff)
	return rand.N(ceiling) + time.Millisecond, nil
}

// Tune applies shardline's settings to client options:
//
//   - The standard retryer, without its client-side retry quota. The quota
//     (a token bucket that each retry drains) exists to stop retry storms
//     against a failing service, but throttling is DynamoDB asking us to slow
//     down, not failing: with the quota, a burst of throttles empties the
//     bucket and every later request fails at once without a single retry.
//     Back-off with jitter already slows us down.
//   - Full-jitter back-off from BaseBackoff doubling to MaxBackoff. The SDK's
//     default starts at a second, which is right for a control plane and far
//     too slow for DynamoDB, whose throttles clear in milliseconds. Every call
//     also carries the deadline's context, so no wait outlasts it.
//   - An HTTP transport that keeps conns idle connections to DynamoDB, one
//     per request in flight, so parallel batches do not reopen TLS sessions.
func Tune(o *dynamodb.Options, conns int) {
	o.Retryer = retry.NewStandard(func(so *retry.StandardOptions) {
		so.RateLimiter = ratelimit.None
		so.MaxAttempts = MaxAttempts
		so.MaxBackoff = MaxBackoff
		so.Backoff = jitter{}
	})
	o.HTTPClient = awshttp.NewBuildableClient().WithTransportOptions(func(t *http.Transport) {
		t.MaxIdleConns = max(conns, 16)
		t.MaxIdleConnsPerHost = max(conns, 16)
	})
}

// New loads the AWS configuration from the environment (AWS_REGION, the
// credential chain, AWS_ENDPOINT_URL_DYNAMODB for a local endpoint) and
// returns a tuned client.
func New(ctx context.Context, conns int) (*dynamodb.Client, error) {
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("load AWS configuration: %w", err)
	}
	if cfg.Region == "" {
		return nil, fmt.Errorf("no AWS region: set AWS_REGION (Lambda sets it for you)")
	}
	return dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) { Tune(o, conns) }), nil
}

// Static is a client for a local endpoint with dummy credentials: the
// access key is the endpoint's user name (Local), "local" when it has none.
func Static(endpoint string, conns int) *dynamodb.Client {
	base, key := Local(endpoint)
	return dynamodb.New(dynamodb.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(base),
		Credentials:  credentials.NewStaticCredentialsProvider(key, "local", ""),
	}, func(o *dynamodb.Options) { Tune(o, conns) })
}

// LocalKey is the access key a local endpoint without a user name is sent
// with; make run's engines and the operator's commands use it.
const LocalKey = "local"

// Local splits a local endpoint into the URL requests go to and the access
// key they are signed with. DynamoDB Local keeps a database per access key,
// so an endpoint such as http://t42@127.0.0.1:8000 names one database of
// that engine (test binaries sharing one DynamoDB Local each keep their
// own); http://127.0.0.1:8000 is LocalKey's. An endpoint that is not a URL
// is returned as it is, with LocalKey, for the SDK to refuse.
func Local(endpoint string) (base, key string) {
	u, err := url.Parse(endpoint)
	if err != nil || u.User == nil || u.User.Username() == "" {
		return endpoint, LocalKey
	}
	key = u.User.Username()
	u.User = nil
	return u.String(), key
}

// WithKey is Local's inverse: endpoint with key as its user name, naming
// key's database of the DynamoDB Local at endpoint.
func WithKey(endpoint, key string) (string, error) {
	u, err := url.Parse(endpoint)
	if err != nil || u.Host == "" {
		return "", fmt.Errorf("%q is not a DynamoDB Local URL such as http://127.0.0.1:8000", endpoint)
	}
	u.User = url.User(key)
	return u.String(), nil
}
