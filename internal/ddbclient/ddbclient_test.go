package ddbclient_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/shardline/shardline/internal/ddbclient"
	"github.com/shardline/shardline/testkit/faultproxy"
)

// TestThrottlingNeverExhaustsRetries: the SDK's default retryer drains a
// 500-token quota by 5 per retry, so after about 100 throttled retries it
// stops retrying at all. Ours retries every call MaxAttempts times however
// long throttling lasts.
func TestThrottlingNeverExhaustsRetries(t *testing.T) {
	p := faultproxy.For(t, "http://127.0.0.1:1") // never reached: every request is throttled
	var calls atomic.Int64
	p.SetRule(func(r faultproxy.Request) (*faultproxy.Fault, faultproxy.Hold) {
		calls.Add(1)
		return faultproxy.Throttled, nil
	})
	c := ddbclient.Static(p.URL, 4)
	const n = 60 // 60 calls × 2 retries × 5 tokens = 600 > 500
	for i := range n {
		before := calls.Load()
		_, err := c.DescribeTable(context.Background(), &dynamodb.DescribeTableInput{TableName: aws.String("t")})
		if err == nil {
			t.Fatal("a throttled call succeeded")
		}
		if got := calls.Load() - before; got != ddbclient.MaxAttempts {
			t.Fatalf("call %d made %d attempts, want %d: %v", i, got, ddbclient.MaxAttempts, err)
		}
	}
}

func TestLocalReadsTheKeyFromTheUserName(t *testing.T) {
	for _, c := range []struct{ endpoint, base, key string }{
		{"http://127.0.0.1:8000", "http://127.0.0.1:8000", ddbclient.LocalKey},
		{"http://t42n7@127.0.0.1:8000", "http://127.0.0.1:8000", "t42n7"},
		{"http://t42n7:secret@127.0.0.1:8000/", "http://127.0.0.1:8000/", "t42n7"},
		{"http://@127.0.0.1:8000", "http://@127.0.0.1:8000", ddbclient.LocalKey},
		{"::not a url", "::not a url", ddbclient.LocalKey},
	} {
		if base, key := ddbclient.Local(c.endpoint); base != c.base || key != c.key {
			t.Errorf("Local(%q) = %q, %q; want %q, %q", c.endpoint, base, key, c.base, c.key)
		}
	}
	for _, c := range []struct{ endpoint, key, want string }{
		{"http://127.0.0.1:8000", "t42n7", "http://t42n7@127.0.0.1:8000"},
		{"http://old@127.0.0.1:8000/", "t42n7", "http://t42n7@127.0.0.1:8000/"},
	} {
		got, err := ddbclient.WithKey(c.endpoint, c.key)
		if err != nil || got != c.want {
			t.Errorf("WithKey(%q, %q) = %q, %v; want %q", c.endpoint, c.key, got, err, c.want)
		}
		if base, key := ddbclient.Local(got); key != c.key || strings.Contains(base, "@") {
			t.Errorf("Local(WithKey(%q, %q)) = %q, %q", c.endpoint, c.key, base, key)
		}
	}
	for _, bad := range []string{"", "127.0.0.1:8000", "::not a url"} {
		if got, err := ddbclient.WithKey(bad, "k"); err == nil || !strings.Contains(err.Error(), "http://127.0.0.1:8000") {
			t.Errorf("WithKey(%q) = %q, %v; want an error that shows a URL", bad, got, err)
		}
	}
}
