package s3local

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// TestEngine: what the pollers and the redrive do with the bucket works on
// s3rver through the AWS SDK: put, a listing of more than a page (its
// continuation tokens need Node's legacy OpenSSL provider), get, delete,
// and a bucket made twice. Close removes the temporary directory.
func TestEngine(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := Start(ctx, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c := Client(s.Endpoint)
	for range 2 {
		if err := CreateBucket(ctx, c, "failed-batches"); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 3 {
		body := []byte(fmt.Sprintf(`{"n":%d}`, i))
		if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("failed-batches"), Key: aws.String(fmt.Sprintf("aws/lambda/m/s/%d", i)),
			Body: bytes.NewReader(body)}); err != nil {
			t.Fatal(err)
		}
	}
	var keys []string
	p := s3.NewListObjectsV2Paginator(c, &s3.ListObjectsV2Input{Bucket: aws.String("failed-batches"), Prefix: aws.String("aws/lambda/"), MaxKeys: aws.Int32(2)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range page.Contents {
			keys = append(keys, *o.Key)
		}
	}
	if fmt.Sprint(keys) != "[aws/lambda/m/s/0 aws/lambda/m/s/1 aws/lambda/m/s/2]" {
		t.Fatal(keys)
	}
	out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("failed-batches"), Key: aws.String("aws/lambda/m/s/1")})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(out.Body)
	out.Body.Close()
	if string(b) != `{"n":1}` {
		t.Fatal(string(b))
	}
	if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("failed-batches"), Key: aws.String("aws/lambda/m/s/1")}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("failed-batches"), Key: aws.String("aws/lambda/m/s/1")}); err == nil {
		t.Fatal("deleted object still there")
	}
	s.Close()
	if _, err := os.Stat(s.Dir); !os.IsNotExist(err) {
		t.Fatalf("%s left behind: %v", s.Dir, err)
	}
}
