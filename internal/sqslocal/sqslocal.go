// Package sqslocal runs an Amazon SQS API on this machine: the npm package
// local-aws-sqs (pinned in tools/), which speaks both the JSON protocol of
// the current AWS SDKs and the older query protocol, in memory. Tests and
// the local run send Lambda's on-failure records to it, and
// `shardline redrive` reads them back.
package sqslocal

import (
	"context"
	"fmt"
	"os"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/shardline/shardline/internal/localproc"
)

// Region and Account appear in the local queues' ARNs and URLs.
const (
	Region  = "us-east-1"
	Account = "000000000000"
)

// launcher starts the server: local-aws-sqs is a library without a command.
// Queues can be deleted and made again at once (AWS makes one wait 60 s),
// which tests that make a queue each need. A client that goes away in the
// middle of a request (a context ended) must not end the process.
const launcher = `
process.on("uncaughtException", (err) => {
  if (err && (err.code === "ECONNRESET" || err.message === "aborted")) return;
  console.error(err);
  process.exit(1);
});
const { createSqsServer } = require("local-aws-sqs");
const port = Number(process.argv[1]);
createSqsServer({ port, hostname: "127.0.0.1", region: %q, accountId: %q, emulateQueueCreationLifecycle: false })
  .then(() => console.log("local-aws-sqs listening on 127.0.0.1:" + port))
  .catch((e) => { console.error(e); process.exit(1); });
`

// Options configure Start.
type Options struct {
	Port int      // 0 picks a free one
	Log  *os.File // the server's output; nil keeps it for an error message
}

// Server is a running local SQS.
type Server struct {
	*localproc.Proc
}

// Start launches the server and waits until it answers.
func Start(ctx context.Context, o Options) (*Server, error) {
	p, err := localproc.StartNode(ctx, "local-aws-sqs", fmt.Sprintf(launcher, Region, Account), []string{"{port}"}, o.Port, o.Log)
	if err != nil {
		return nil, err
	}
	return &Server{p}, nil
}

// Client is an SQS client of the server at endpoint with the local region
// and dummy credentials.
func Client(endpoint string) *sqs.Client {
	return sqs.New(sqs.Options{
		Region:       Region,
		BaseEndpoint: aws.String(endpoint),
		Credentials:  credentials.NewStaticCredentialsProvider("local", "local", ""),
	})
}

// CreateQueue makes a standard queue (or finds the one of that name) and
// returns its URL.
func CreateQueue(ctx context.Context, c *sqs.Client, name string) (string, error) {
	out, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name)})
	if err != nil {
		return "", fmt.Errorf("create queue %s: %w", name, err)
	}
	return aws.ToString(out.QueueUrl), nil
}
