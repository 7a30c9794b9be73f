package onfailure

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// Prefix is where Lambda writes on-failure records in a destination bucket.
const Prefix = "aws/lambda/"

// Key is the object key Lambda gives the on-failure record of a batch of
// shardID given up on at at by the event source mapping mappingUUID:
// aws/lambda/<mapping UUID>/<shard id>/YYYY/MM/DD/YYYY-MM-DDTHH.MM.SS-<random UUID>.
func Key(mappingUUID, shardID string, at time.Time) string {
	at = at.UTC()
	return Prefix + mappingUUID + "/" + shardID + "/" + at.Format("2006/01/02") + "/" + at.Format("2006-01-02T15.04.05") + "-" + RandomUUID()
}

// S3API is the part of the S3 client a destination uses.
type S3API interface {
	PutObject(context.Context, *s3.PutObjectInput, ...func(*s3.Options)) (*s3.PutObjectOutput, error)
}

// S3 is an event source mapping's S3 on-failure destination, as the local
// pollers play it.
type S3 struct {
	Client      S3API
	Bucket      string
	MappingUUID string // the event source mapping's id, in the object keys
}

// Put writes r as one object, under the key Lambda would give it.
func (d S3) Put(ctx context.Context, r Record) error {
	body, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("on-failure record: %w", err)
	}
	at, err := time.Parse(time.RFC3339Nano, r.Timestamp)
	if err != nil {
		at = time.Now()
	}
	key := Key(d.MappingUUID, r.Batch().ShardID, at)
	if _, err := d.Client.PutObject(ctx, &s3.PutObjectInput{
		Bucket: aws.String(d.Bucket), Key: aws.String(key),
		Body: bytes.NewReader(body), ContentLength: aws.Int64(int64(len(body))),
		ContentType: aws.String("application/json"),
	}); err != nil {
		return fmt.Errorf("put on-failure record s3://%s/%s: %w", d.Bucket, key, err)
	}
	return nil
}
