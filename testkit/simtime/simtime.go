// Package simtime runs a heat simulation on a virtual clock
// (testing/synctest): simulated time advances only when every goroutine of
// the simulation waits on it, never while one works or waits on DynamoDB
// Local. A slow or busy machine changes how long a simulation takes, never
// what it measures. docs/development.md says how to write one.
package simtime

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/shardline/shardline/internal/ddbclient"
)

// Clock is a simulation's clock: its Now starts at the start Run was given
// and runs on synctest's virtual time.
type Clock struct {
	offset time.Duration // from synctest's time to the simulation's
	seen   atomic.Int64  // the simulation's time at the last request sent, Unix nanoseconds
	out    *sender       // sends the Clients' requests from outside the bubble
}

// Run runs f in a synctest bubble with a clock that starts at start. f, and
// every goroutine it starts, must end before Run returns; make DynamoDB
// clients inside f with Clock.Client. t must not be parallel inside f: call
// t.Parallel before Run.
func Run(t *testing.T, start time.Time, f func(t *testing.T, c *Clock)) {
	t.Helper()
	out := newSender()
	defer out.close()
	synctest.Test(t, func(t *testing.T) {
		c := &Clock{offset: start.Sub(time.Now()), out: out}
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
// Seen. Its requests are sent from outside the bubble (sender), over
// connections kept open as a function's client keeps them.
func (c *Clock) Client(endpoint string, lag time.Duration) *dynamodb.Client {
	o := ddbclient.Static(endpoint, 32).Options()
	o.HTTPClient = &stamping{clock: c, lag: lag}
	return dynamodb.New(o)
}

// stamping is an HTTP client that waits lag, stamps the clock's Seen, then
// sends through the clock's sender.
type stamping struct {
	clock *Clock
	lag   time.Duration
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
	return s.clock.out.Do(r)
}

// sender sends a simulation's requests from goroutines outside its bubble.
// A connection kept open in the bubble would stop the clock: its reading
// goroutine waits on the network, which synctest does not count as waiting
// on the clock, and it waits until the connection closes. So a Client
// opened a connection per request: the ramp on quarter-nominal keys took
// 0.78 ms of Go CPU an event that way, 0.69 with connections kept open
// (its system time 11.6 -> 7.8 s). Outside, the connections stay
// open between requests; the caller waits for the answer on a channel made
// outside the bubble, which synctest does not count as waiting on the
// clock either, so the clock stands still while a request is under way,
// as it did.
type sender struct {
	client    *http.Client
	jobs      chan job
	replies   chan chan reply // made outside the bubble, one per request under way
	abandoned chan chan reply // of requests whose caller's context ended first
}

// job is a request to send and where its answer goes.
type job struct {
	r     *http.Request
	reply chan reply
}

// reply is a request's answer.
type reply struct {
	resp *http.Response
	err  error
}

// newSender starts a sender; close stops it.
func newSender() *sender {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns, t.MaxIdleConnsPerHost = 256, 256
	s := &sender{client: &http.Client{Transport: t}, jobs: make(chan job),
		replies: make(chan chan reply, 256), abandoned: make(chan chan reply, 256)}
	for range cap(s.replies) {
		s.replies <- make(chan reply, 1)
	}
	go func() {
		for {
			select {
			case j, ok := <-s.jobs:
				if !ok {
					return
				}
				go func() {
					resp, err := s.client.Do(j.r)
					j.reply <- reply{resp, err}
				}()
			case ch := <-s.abandoned:
				// The answer nobody waits for is dropped, and its
				// channel goes back for another request.
				go func() {
					if rep := <-ch; rep.resp != nil {
						rep.resp.Body.Close()
					}
					s.replies <- ch
				}()
			}
		}
	}()
	return s
}

// Do sends r from outside the bubble and waits for its answer, or until
// r's context ends: another goroutine of the simulation cancelled it (its
// deadline cannot pass, since the clock stands still while a request is
// under way). The request then goes on, as one abandoned goes on to
// DynamoDB, and Do returns the context's error, as the SDK's transport
// does. The request leaves without the context's deadline and
// cancellation, which are the bubble's.
func (s *sender) Do(r *http.Request) (*http.Response, error) {
	ch := <-s.replies
	s.jobs <- job{r.WithContext(context.WithoutCancel(r.Context())), ch}
	select {
	case rep := <-ch:
		s.replies <- ch
		return rep.resp, rep.err
	case <-r.Context().Done():
		s.abandoned <- ch
		return nil, r.Context().Err()
	}
}

// close stops the sender and closes its idle connections.
func (s *sender) close() {
	close(s.jobs)
	s.client.CloseIdleConnections()
}
