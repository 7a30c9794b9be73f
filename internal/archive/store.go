package archive

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// Client is the part of the S3 client the archive function uses.
type Client interface {
	PutObject(context.Context, *s3.PutObjectInput, ...func(*s3.Options)) (*s3.PutObjectOutput, error)
}

// S3 is the archive bucket.
type S3 struct {
	Client Client
	Bucket string
}

// Put writes one object. The bucket encrypts it with its default key.
func (s S3) Put(ctx context.Context, key string, body []byte) error {
	_, err := s.Client.PutObject(ctx, &s3.PutObjectInput{
		Bucket:        aws.String(s.Bucket),
		Key:           aws.String(key),
		Body:          bytes.NewReader(body),
		ContentLength: aws.Int64(int64(len(body))),
		ContentType:   aws.String("application/x-ndjson"),
	})
	if err != nil {
		return fmt.Errorf("s3 put s3://%s/%s: %w", s.Bucket, key, err)
	}
	return nil
}

// Dir keeps objects as files under a directory, their keys as paths: where
// `make run` archives, since no S3 runs on the machine.
type Dir string

// Put writes one object's file whole, or not at all.
func (d Dir) Put(_ context.Context, key string, body []byte) error {
	path := filepath.Join(string(d), filepath.FromSlash(key))
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("archive directory: %w", err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, body, 0o644); err != nil {
		return fmt.Errorf("write %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("archive %s: %w", path, err)
	}
	return nil
}
