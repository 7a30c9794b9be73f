package devserver

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/shardline/shardline/local/ddbstreams"
	"github.com/shardline/shardline/local/s3local"
	"github.com/shardline/shardline/ops/onfailure"
)

// FailedBucket is the local on-failure bucket: every local event source
// mapping writes the batches it gives up on there, records included, as
// the stack's mappings write to its FailedBatches bucket.
const FailedBucket = "shardline-failed-batches"

// The local functions' names, as the on-failure records name them.
const (
	LocalIngestFunction  = "shardline-ingest-local"
	LocalCounterFunction = "shardline-counter-local"
	LocalArchiveFunction = "shardline-archive-local"
)

// The local mappings' ids, in the on-failure objects' keys
// (aws/lambda/<mapping id>/...), as `shardline redrive` is told them.
const (
	LocalIngestMapping  = "local-ingest"
	LocalCounterMapping = "local-counter"
	LocalArchiveMapping = "local-archive"
)

// The local mappings of the table's stream give a failing batch up as the
// stack's do (infra/shardline: StreamRetryAttempts, StreamMaxRecordAge).
const (
	LocalStreamRetryAttempts = 10
	LocalStreamMaxRecordAge  = 6 * time.Hour
)

// failed is the local S3 that holds the on-failure bucket.
type failed struct {
	endpoint string
	client   *s3.Client
	dir      string
}

// startS3 starts s3rver, keeping its buckets under dbDir when the data is
// kept, and makes the on-failure bucket.
func startS3(ctx context.Context, out io.Writer, port int, dbDir string) (failed, func(), error) {
	dir := ""
	if dbDir != "" {
		dir = filepath.Join(dbDir, "s3")
	}
	srv, err := s3local.Start(ctx, s3local.Options{Port: port, Dir: dir})
	if err != nil {
		return failed{}, nil, fmt.Errorf("local S3: %w (choose another port with -s3-port)", err)
	}
	stop := func() { srv.Close(); fmt.Fprintln(out, "stopped the local S3") }
	f := failed{endpoint: srv.Endpoint, client: s3local.Client(srv.Endpoint), dir: srv.Dir}
	if err := s3local.CreateBucket(ctx, f.client, FailedBucket); err != nil {
		stop()
		return failed{}, nil, err
	}
	fmt.Fprintf(out, "local S3 (s3rver) at %s: on-failure bucket %s (in %s)\n", f.endpoint, FailedBucket, f.dir)
	return f, stop, nil
}

// destination is the on-failure destination of the mapping whose id is
// mapping.
func (f failed) destination(mapping string) onfailure.S3 {
	return onfailure.S3{Client: f.client, Bucket: FailedBucket, MappingUUID: mapping}
}

// retry is how the local mapping of function fn on the table's stream
// treats a failing batch: as the stack's.
func (f failed) retry(fn, mapping string) *ddbstreams.Retry {
	return &ddbstreams.Retry{
		RetryAttempts: LocalStreamRetryAttempts, Bisect: true, MaxRecordAge: LocalStreamMaxRecordAge,
		OnFailure:   f.destination(mapping).Put,
		FunctionARN: localFunctionARN(fn),
	}
}

// localFunctionARN is the ARN the local records give function fn.
func localFunctionARN(fn string) string {
	return "arn:aws:lambda:us-east-1:000000000000:function:" + fn
}
