package redrive

import (
	"context"
	"fmt"
	"io"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// objects lists a bucket's keys under a prefix a page at a time, fetching
// the next page only when the last is used up.
type objects struct {
	r      *Redriver
	prefix string
	page   []string
	token  *string
	done   bool
}

func (r *Redriver) list(prefix string) *objects { return &objects{r: r, prefix: prefix} }

// next is the next key; ok is false at the end of the listing.
func (o *objects) next(ctx context.Context) (key string, ok bool, err error) {
	for len(o.page) == 0 {
		if o.done {
			return "", false, nil
		}
		out, err := o.r.S3.ListObjectsV2(ctx, &s3.ListObjectsV2Input{
			Bucket: aws.String(o.r.Bucket), Prefix: aws.String(o.prefix), ContinuationToken: o.token,
		})
		if err != nil {
			return "", false, fmt.Errorf("list s3://%s/%s: %w", o.r.Bucket, o.prefix, err)
		}
		for _, c := range out.Contents {
			o.page = append(o.page, aws.ToString(c.Key))
		}
		o.token = out.NextContinuationToken
		o.done = !aws.ToBool(out.IsTruncated) || o.token == nil
	}
	key, o.page = o.page[0], o.page[1:]
	return key, true, nil
}

// maxObjectBytes bounds what is read of an object: an on-failure record
// holds one invocation's event (at most 6 MB) and its metadata.
const maxObjectBytes = 16 << 20

func (r *Redriver) get(ctx context.Context, key string) ([]byte, error) {
	out, err := r.S3.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(r.Bucket), Key: aws.String(key)})
	if err != nil {
		return nil, fmt.Errorf("get s3://%s/%s: %w", r.Bucket, key, err)
	}
	defer out.Body.Close()
	b, err := io.ReadAll(io.LimitReader(out.Body, maxObjectBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read s3://%s/%s: %w", r.Bucket, key, err)
	}
	if len(b) > maxObjectBytes {
		return nil, fmt.Errorf("s3://%s/%s is over %d bytes: not an on-failure record", r.Bucket, key, maxObjectBytes)
	}
	return b, nil
}

func (r *Redriver) delete(ctx context.Context, key string) error {
	if _, err := r.S3.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(r.Bucket), Key: aws.String(key)}); err != nil {
		return fmt.Errorf("delete s3://%s/%s: %w", r.Bucket, key, err)
	}
	return nil
}
