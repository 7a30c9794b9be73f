package ingest

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/shardline/shardline/internal/deadline"
	"github.com/shardline/shardline/testkit/faultproxy"
	"github.com/shardline/shardline/testkit/testddb"
)

// deadlineRecorder is the real client, noting the deadline of the context
// each BatchWriteItem is given.
type deadlineRecorder struct {
	*dynamodb.Client
	mu        sync.Mutex
	deadlines []time.Time
}

func (c *deadlineRecorder) BatchWriteItem(ctx context.Context, in *dynamodb.BatchWriteItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error) {
	dl, ok := ctx.Deadline()
	c.mu.Lock()
	if ok {
		c.deadlines = append(c.deadlines, dl)
	} else {
		c.deadlines = append(c.deadlines, time.Time{})
	}
	c.mu.Unlock()
	return c.Client.BatchWriteItem(ctx, in, opts...)
}

func batchBody(n int, prefix string) string {
	evs := make([]string, n)
	for i := range evs {
		evs[i] = string(eventJSON("web", fmt.Sprintf("%s-%d", prefix, i), fixtureNow.Add(-time.Minute)))
	}
	return "[" + strings.Join(evs, ",") + "]"
}

// TestHTTPWorkEndsWithinAPIGatewaysLimit: the ingest function also serves
// Kinesis with a 60-second timeout, so an API request arrives with about 59
// seconds left; API Gateway gives up at 30. The deadline of every write is
// within deadline.API of the request, however long the invocation has, and
// less the time a cold start took.
func TestHTTPWorkEndsWithinAPIGatewaysLimit(t *testing.T) {
	e := newEnv(t, true, nil)
	e.proxy.SetLatency(100 * time.Millisecond) // a slow DynamoDB
	for _, coldStart := range []time.Duration{0, 5 * time.Second} {
		rec := &deadlineRecorder{Client: testddb.Client(t, e.proxy.URL)}
		h := checked(t, New(DefaultConfig(e.table), rec, Options{Now: func() time.Time { return fixtureNow }}))
		req := post(batchBody(60, fmt.Sprint("b", coldStart)), "application/cloudevents-batch+json")
		req.RequestContext.TimeEpoch = fixtureNow.Add(-coldStart).UnixMilli() // when API Gateway received it

		ctx, cancel := context.WithTimeout(context.Background(), 59*time.Second)
		resp, err := h.HTTP(ctx, req)
		after := time.Now()
		cancel()
		if err != nil || resp.StatusCode != 202 {
			t.Fatalf("%v %d %s", err, resp.StatusCode, resp.Body)
		}
		if len(rec.deadlines) == 0 {
			t.Fatal("no BatchWriteItem was made")
		}
		budget := deadline.API - coldStart
		for _, dl := range rec.deadlines {
			// The handler set its deadline before it returned, at most
			// budget after then.
			if dl.IsZero() || dl.After(after.Add(budget)) {
				t.Fatalf("after a %v cold start a write had deadline %v, %v after the handler returned; want at most %v "+
					"(API Gateway gives up %v after it received the request)",
					coldStart, dl.Format(time.RFC3339Nano), dl.Sub(after).Round(time.Millisecond), budget, deadline.APILimit)
			}
		}
	}
}

// TestHTTPAnswersWhatItDidWhenTheBudgetRunsOut: with a 2-second budget
// (deadline.API, shortened for the test) and an invocation deadline far
// beyond it, DynamoDB takes the first batch, then hangs. The handler stops
// writing at the budget and answers 503 with Retry-After, the events stored,
// and each event it did not store, so that the client can send them again.
func TestHTTPAnswersWhatItDidWhenTheBudgetRunsOut(t *testing.T) {
	e := newEnv(t, true, nil)
	cfg := DefaultConfig(e.table)
	cfg.WriteConcurrency = 1 // one batch after the other
	h := checked(t, New(cfg, testddb.Client(t, e.proxy.URL), Options{Now: func() time.Time { return fixtureNow }, APIBudget: 2 * time.Second}))
	var hung sync.Once
	e.proxy.SetRule(func(r faultproxy.Request) (*faultproxy.Fault, faultproxy.Hold) {
		if r.Op == "BatchWriteItem" {
			hung.Do(func() { e.proxy.SetLatency(4 * time.Second) }) // every request after this one
		}
		return nil, nil
	})
	req := post(batchBody(100, "late"), "application/cloudevents-batch+json")
	ctx, cancel := context.WithTimeout(context.Background(), 59*time.Second)
	defer cancel()
	resp, err := h.HTTP(ctx, req)
	// The proxy forwards a held request when it wakes, even if its caller
	// has gone (the server notices only when it reads the body): answer
	// those with an error, so that the table holds what the handler did.
	e.proxy.SetRule(func(r faultproxy.Request) (*faultproxy.Fault, faultproxy.Hold) { return faultproxy.ServerError, nil })
	if err != nil || resp.StatusCode != 503 || resp.Headers["Retry-After"] == "" {
		t.Fatalf("%v: %d %v %s; want 503 with Retry-After", err, resp.StatusCode, resp.Headers, resp.Body)
	}
	r := decodeResponse(t, resp.Body)
	if r.Accepted != 25 || len(r.Retry) != 75 || len(r.Rejected) != 0 || !strings.Contains(r.Error, "again") {
		t.Fatalf("body %s; want 25 accepted and the other 75 listed to send again", resp.Body)
	}
	for k, f := range r.Retry {
		if f.Index != 25+k || f.ID != fmt.Sprintf("late-%d", 25+k) || !strings.Contains(f.Error, "again") {
			t.Fatalf("retry[%d] = %+v; want event %d, late-%d", k, f, 25+k, 25+k)
		}
	}
	if n := len(e.itemsIn(t, "E#")); n != 25 {
		t.Fatalf("%d events stored; the answer said 25", n)
	}
}
