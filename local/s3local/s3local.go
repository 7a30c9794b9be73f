// Package s3local runs an Amazon S3 API on this machine: the npm package
// s3rver (pinned in tools/), which keeps buckets as files in a directory
// and answers the AWS SDK's path-style requests. The local pollers write
// the on-failure records of the batches they give up on to it, and
// `shardline redrive` reads them back, as they do with the stack's bucket.
package s3local

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/shardline/shardline/local/localproc"
)

// Region is the local buckets' region.
const Region = "us-east-1"

// launcher starts s3rver on 127.0.0.1, quiet, path-style only, accepting
// the local run's dummy credentials (local/local) besides its own. s3rver
// checks signatures; the SDK signs with those credentials, so they must be
// known to it.
//
// s3rver encrypts ListObjectsV2's continuation tokens with DES, which
// OpenSSL 3 (Node 17 and later) keeps in its legacy provider: Start runs
// node with --openssl-legacy-provider, or a listing of more than a page
// would fail.
const launcher = `
process.on("uncaughtException", (err) => {
  if (err && (err.code === "ECONNRESET" || err.message === "aborted")) return;
  console.error(err);
  process.exit(1);
});
const S3rver = require("s3rver");
const { DUMMY_ACCOUNT } = require("s3rver/lib/models/account");
DUMMY_ACCOUNT.createKeyPair("local", "local");
const port = Number(process.argv[1]);
new S3rver({ port, address: "127.0.0.1", directory: process.argv[2], silent: true, vhostBuckets: false })
  .run()
  .then(() => console.log("s3rver listening on 127.0.0.1:" + port))
  .catch((e) => { console.error(e); process.exit(1); });
`

// Options configure Start.
type Options struct {
	Port int // 0 picks a free one
	// Dir keeps the buckets; empty is a temporary directory, removed by
	// Close.
	Dir string
	Log *os.File // s3rver's output; nil keeps it for an error message
}

// Server is a running s3rver.
type Server struct {
	*localproc.Proc
	Dir  string // where the buckets are kept
	temp bool
}

// Start launches s3rver and waits until it answers.
func Start(ctx context.Context, o Options) (*Server, error) {
	s := &Server{Dir: o.Dir}
	if s.Dir == "" {
		dir, err := os.MkdirTemp("", "shardline-s3-")
		if err != nil {
			return nil, fmt.Errorf("local S3 directory: %w", err)
		}
		s.Dir, s.temp = dir, true
	} else if err := os.MkdirAll(s.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("local S3 directory: %w", err)
	}
	p, err := localproc.StartNodeFlags(ctx, "s3rver", []string{"--openssl-legacy-provider"}, launcher, []string{"{port}", s.Dir}, o.Port, o.Log)
	if err != nil {
		s.removeTemp()
		return nil, err
	}
	s.Proc = p
	return s, nil
}

// Close stops s3rver and removes its temporary directory.
func (s *Server) Close() error {
	err := s.Proc.Close()
	s.removeTemp()
	return err
}

func (s *Server) removeTemp() {
	if s.temp {
		os.RemoveAll(s.Dir)
	}
}

// Client is an S3 client of the server at endpoint, path-style, with the
// local region and dummy credentials.
func Client(endpoint string) *s3.Client {
	return s3.New(s3.Options{
		Region:       Region,
		BaseEndpoint: aws.String(endpoint),
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider("local", "local", ""),
		// s3rver sends no response checksums; the SDK would log each.
		DisableLogOutputChecksumValidationSkipped: true,
	})
}

// CreateBucket makes a bucket, or finds the one of that name.
func CreateBucket(ctx context.Context, c *s3.Client, name string) error {
	_, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(name)})
	var owned *types.BucketAlreadyOwnedByYou
	var exists *types.BucketAlreadyExists
	if err != nil && !errors.As(err, &owned) && !errors.As(err, &exists) {
		return fmt.Errorf("create bucket %s: %w", name, err)
	}
	return nil
}
