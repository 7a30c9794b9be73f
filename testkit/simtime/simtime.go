// Package simtime runs a heat simulation on a virtual clock
// (testing/synctest): simulated time advances only when every goroutine of
// the simulation waits on it, never while one works or waits on DynamoDB
// Local. A slow or busy machine changes how long a simulation takes, never
// what it measures. docs/development.md says how to write one.
package simtime

import (
	"net/http"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/shardline/shardline/internal/ddbclient"
)

// Clock is a simulation's clock: its Now starts at the start Run was given
// and runs on synctest's virtual time.
type Clock struct {
	offset time.Duration // from synctest's time to the simulation's
	seen   atomic.Int64  // the simulation's time at the last request sent, Unix nanoseconds
}

// Run runs f in a synctest bubble with a clock that starts at start. f, and
// every goroutine it starts, must end before Run returns; make DynamoDB
// clients inside f with Clock.Client. t must not be parallel inside f: call
// t.Parallel before Run.
func Run(t *testing.T, start time.Time, f func(t *testing.T, c *Clock)) {
	t.Helper()
	synctest.Test(t, func(t *testing.T) {
		c := &Clock{offset: start.Sub(time.Now())}
		c.seen.Store(start.UnixNano())
		f(t, c)
	})
}

// Now is the simulation's time. Call it inside the bubble.
func (c *Clock) Now() time.Time { return time.Now().Add(c.offset) }

// Seen is the simulation's time as of the last request a Client sent: for
// what runs outside the bubble, such as a fault proxy's partition model.
// While a request is under way the virtual clock stands still (its sender
// waits on the network, which synctest does not count as waiting on the
// clock), so a proxy handling it reads the time it was sent at.
func (c *Clock) Seen() time.Time { return time.Unix(0, c.seen.Load()).UTC() }

// Client is a DynamoDB client of endpoint for use inside the bubble,
// configured as testddb's (the functions' settings), whose every request
// first waits lag of the clock, as DynamoDB's latency does, and stamps
// Seen. It opens a connection per request: an idle pooled connection
// waits on the network forever, and so would stop the clock.
func (c *Clock) Client(endpoint string, lag time.Duration) *dynamodb.Client {
	o := ddbclient.Static(endpoint, 32).Options()
	o.HTTPClient = &stamping{clock: c, lag: lag, next: awshttp.NewBuildableClient().WithTransportOptions(func(t *http.Transport) {
		t.DisableKeepAlives = true
	})}
	return dynamodb.New(o)
}

// stamping is an HTTP client that waits lag, stamps the clock's Seen, then
// sends.
type stamping struct {
	clock *Clock
	lag   time.Duration
	next  *awshttp.BuildableClient
}

func (s *stamping) Do(r *http.Request) (*http.Response, error) {
	if s.lag > 0 {
		t := time.NewTimer(s.lag)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
			return nil, r.Context().Err()
		}
	}
	s.clock.seen.Store(s.clock.Now().UnixNano())
	return s.next.Do(r)
}
