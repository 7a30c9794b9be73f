// Package kinesislocal runs kinesalite, a Kinesis Data Streams API on this
// machine (the npm package pinned in tools/, in memory), for the local run
// and for tests, and makes streams in it.
package kinesislocal

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/shardline/shardline/internal/backoff"
	"github.com/shardline/shardline/local/localproc"
)

// Region is the region of the local streams' ARNs. kinesalite names every
// stream arn:aws:kinesis:us-east-1:000000000000:stream/NAME.
const Region = "us-east-1"

// Options configure Start.
type Options struct {
	Port int      // 0 picks a free one
	Log  *os.File // kinesalite's output; nil keeps it for an error message
}

// Server is a running kinesalite.
type Server struct {
	*localproc.Proc
}

// launcher starts kinesalite in memory (no path: memdown keeps the
// streams, and leveldown, an optional dependency with a native build, is
// never loaded), with streams active as soon as they are created, on
// 127.0.0.1. kinesalite throws from a request's error handler when a client
// goes away in the middle of a request (a poller stopped by Ctrl-C, a test's
// context ending), which would end the process: the launcher lets that one
// error pass.
const launcher = `
process.on("uncaughtException", (err) => {
  if (err && (err.code === "ECONNRESET" || err.message === "aborted")) return;
  console.error(err);
  process.exit(1);
});
const port = Number(process.argv[1]);
const server = require("kinesalite")({ createStreamMs: 0, deleteStreamMs: 0, updateStreamMs: 0, shardLimit: 100 });
server.listen(port, "127.0.0.1", () => console.log("kinesalite listening on 127.0.0.1:" + port));
`

// Start launches kinesalite and waits until it answers.
func Start(ctx context.Context, o Options) (*Server, error) {
	p, err := localproc.StartNode(ctx, "kinesalite", launcher, []string{"{port}"}, o.Port, o.Log)
	if err != nil {
		return nil, err
	}
	return &Server{p}, nil
}

// Client is a Kinesis client of the API at endpoint (kinesalite, or a fault
// proxy in front of it) with the local region and dummy credentials.
func Client(endpoint string) *kinesis.Client {
	return kinesis.New(kinesis.Options{
		Region:       Region,
		BaseEndpoint: aws.String(endpoint),
		Credentials:  credentials.NewStaticCredentialsProvider("local", "local", ""),
	})
}

// CreateStream creates a provisioned stream of shards shards, waits until it
// is active and returns its ARN. A stream of that name that exists already
// is kept.
func CreateStream(ctx context.Context, c *kinesis.Client, name string, shards int) (string, error) {
	_, err := c.CreateStream(ctx, &kinesis.CreateStreamInput{StreamName: aws.String(name), ShardCount: aws.Int32(int32(shards))})
	var inUse *types.ResourceInUseException
	if err != nil && !errors.As(err, &inUse) {
		return "", fmt.Errorf("create stream %s: %w", name, err)
	}
	for {
		out, err := c.DescribeStreamSummary(ctx, &kinesis.DescribeStreamSummaryInput{StreamName: aws.String(name)})
		if err != nil {
			return "", fmt.Errorf("describe stream %s: %w", name, err)
		}
		if s := out.StreamDescriptionSummary; s.StreamStatus == types.StreamStatusActive {
			return aws.ToString(s.StreamARN), nil
		}
		if err := backoff.Sleep(ctx, 20*time.Millisecond); err != nil {
			return "", fmt.Errorf("stream %s is not active: %w", name, err)
		}
	}
}
