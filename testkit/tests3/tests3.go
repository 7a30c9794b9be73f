// Package tests3 gives a test binary one local S3 (s3rver) and a fresh
// bucket per test. Start it with testddb.MainWith(m, tests3.Start); tests
// fail, never skip, when Node or the package is missing.
package tests3

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/shardline/shardline/local/s3local"
	"github.com/shardline/shardline/testkit/testddb"
)

var (
	engine  = testddb.NewRunning("the local S3", "testddb.MainWith(m, tests3.Start)")
	server  *s3local.Server
	buckets atomic.Int64
)

// Start starts the local S3; it is a testddb.Engine.
func Start(ctx context.Context) (func(), error) {
	s, err := s3local.Start(ctx, s3local.Options{})
	if err != nil {
		return nil, err
	}
	server = s
	engine.Hold(s.Proc)
	return func() { s.Close() }, nil
}

// Endpoint is the local S3's URL.
func Endpoint(t testing.TB) string {
	t.Helper()
	return engine.Endpoint(t)
}

// Client is a client of the local S3.
func Client(t testing.TB) *s3.Client {
	t.Helper()
	return s3local.Client(Endpoint(t))
}

// Bucket creates a bucket for this test, emptied and deleted when it ends,
// and returns its name.
func Bucket(t testing.TB) string {
	t.Helper()
	c := Client(t)
	name := fmt.Sprintf("b%d-%s", buckets.Add(1), strings.ToLower(t.Name()))
	name = sanitize(name)
	if err := s3local.CreateBucket(context.Background(), c, name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		for _, k := range Keys(t, name) {
			c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(name), Key: aws.String(k)})
		}
		if _, err := c.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String(name)}); err != nil {
			t.Errorf("delete bucket %s: %v", name, err)
		}
	})
	return name
}

// Keys lists the bucket's object keys, in order.
func Keys(t testing.TB, bucket string) []string {
	t.Helper()
	var keys []string
	p := s3.NewListObjectsV2Paginator(Client(t), &s3.ListObjectsV2Input{Bucket: aws.String(bucket)})
	for p.HasMorePages() {
		page, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatalf("list %s: %v", bucket, err)
		}
		for _, o := range page.Contents {
			keys = append(keys, aws.ToString(o.Key))
		}
	}
	return keys
}

// sanitize keeps what a bucket name may hold: [a-z0-9-], starting and
// ending with a letter or digit, 63 at most.
func sanitize(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9') {
			b[i] = '-'
		}
	}
	s = strings.TrimRight(string(b[:min(len(b), 63)]), "-")
	return s
}

// Get reads an object whole.
func Get(t testing.TB, bucket, key string) []byte {
	t.Helper()
	out, err := Client(t).GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		t.Fatalf("get s3://%s/%s: %v", bucket, key, err)
	}
	defer out.Body.Close()
	b, err := io.ReadAll(out.Body)
	if err != nil {
		t.Fatalf("get s3://%s/%s: %v", bucket, key, err)
	}
	return b
}
