// Package testsqs gives a test binary one local SQS (local-aws-sqs) and a
// fresh queue per test. Start it with testdb.MainWith(m, testsqs.Start);
// tests fail, never skip, when Node or the package is missing.
package testsqs

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/shardline/shardline/internal/sqslocal"
	"github.com/shardline/shardline/internal/testdb"
)

var (
	engine = testdb.NewRunning("the local SQS", "testdb.MainWith(m, testsqs.Start)")
	queues atomic.Int64
)

// Start starts the local SQS; it is a testdb.Engine.
func Start(ctx context.Context) (func(), error) {
	s, err := sqslocal.Start(ctx, sqslocal.Options{})
	if err != nil {
		return nil, err
	}
	return engine.Hold(s.Proc), nil
}

// Endpoint is the local SQS's URL.
func Endpoint(t testing.TB) string {
	t.Helper()
	return engine.Endpoint(t)
}

// Client is a client of the local SQS.
func Client(t testing.TB) *sqs.Client {
	t.Helper()
	return sqslocal.Client(Endpoint(t))
}

// Queue creates a queue for this test, deleted when it ends, and returns
// its URL.
func Queue(t testing.TB) string {
	t.Helper()
	c := Client(t)
	name := sanitize(fmt.Sprintf("q%d-%s", queues.Add(1), t.Name()))
	url, err := sqslocal.CreateQueue(context.Background(), c, name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := c.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: aws.String(url)}); err != nil {
			t.Errorf("delete queue %s: %v", name, err)
		}
	})
	return url
}

// sanitize keeps what a queue name may hold: [a-zA-Z0-9_-], 80 at most.
func sanitize(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			b[i] = '-'
		}
	}
	return string(b[:min(len(b), 80)])
}
