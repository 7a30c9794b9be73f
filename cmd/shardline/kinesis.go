// Reaching a Kinesis stream for send: the client, local credentials, and a
// check that the stream is there before anything is sent.

package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/feature/ec2/imds"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"
	"github.com/aws/smithy-go"
)

// localKinesis is make run's kinesalite.
const localKinesis = "http://127.0.0.1:4567"

// localKinesisRegion is the region requests to a local Kinesis are signed
// for when none is configured: kinesalite's, kinesislocal.Region
// (TestLocalKinesisRegion keeps them equal without building the local
// engine into this binary).
const localKinesisRegion = "us-east-1"

// streamCheckTimeout bounds the check that the stream is there: a Kinesis
// that does not answer in this time is reported, not waited on.
const streamCheckTimeout = 5 * time.Second

// kinesisEndpoint is the endpoint send uses: -endpoint, else the SDK's
// variables for one; "" for the SDK's default (AWS).
func kinesisEndpoint(flag string) string {
	for _, v := range []string{flag, os.Getenv("AWS_ENDPOINT_URL_KINESIS"), os.Getenv("AWS_ENDPOINT_URL")} {
		if v != "" {
			return v
		}
	}
	return ""
}

// kinesisClient is a Kinesis client of endpoint (-endpoint; "" for the
// SDK's configuration) and a phrase naming where it points, for messages.
// For an endpoint on this machine (kinesalite) the EC2 instance metadata
// service is never asked: credentials come from the environment or the
// profile when set, else local static ones, and the region defaults to
// kinesalite's.
func kinesisClient(ctx context.Context, flag string) (*kinesis.Client, string, error) {
	endpoint := kinesisEndpoint(flag)
	local := false
	if endpoint != "" {
		u, err := url.Parse(endpoint)
		if err != nil || u.Host == "" {
			return nil, "", fmt.Errorf("the Kinesis endpoint %q: want a URL such as %s", endpoint, localKinesis)
		}
		local = isLoopback(u.Hostname())
	}
	var opts []func(*config.LoadOptions) error
	if local {
		opts = append(opts, config.WithEC2IMDSClientEnableState(imds.ClientDisabled))
	}
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, "", fmt.Errorf("load AWS configuration: %w", err)
	}
	if local {
		if cfg.Region == "" {
			cfg.Region = localKinesisRegion
		}
		if _, err := cfg.Credentials.Retrieve(ctx); err != nil {
			// kinesalite takes any credentials.
			cfg.Credentials = credentials.NewStaticCredentialsProvider("local", "local", "")
		}
	}
	if cfg.Region == "" {
		return nil, "", errors.New("the Kinesis stream's region is not set: set AWS_REGION (or a profile's region), or -endpoint " + localKinesis + " for make run's kinesalite")
	}
	where := "Kinesis in " + cfg.Region
	var kopts []func(*kinesis.Options)
	if flag != "" {
		kopts = append(kopts, func(o *kinesis.Options) { o.BaseEndpoint = aws.String(flag) })
	}
	if endpoint != "" {
		where = "Kinesis at " + endpoint
	}
	return kinesis.NewFromConfig(cfg, kopts...), where, nil
}

// checkStream asks once, within streamCheckTimeout, whether stream is
// there, so that a missing stream or an unreachable Kinesis stops send at
// once with what to check, instead of after every retry of every batch.
// Credentials that may put records but not describe the stream pass.
func checkStream(ctx context.Context, c *kinesis.Client, stream, where string) error {
	ctx, cancel := context.WithTimeout(ctx, streamCheckTimeout)
	defer cancel()
	in := &kinesis.DescribeStreamSummaryInput{}
	if isARN(stream) {
		in.StreamARN = aws.String(stream)
	} else {
		in.StreamName = aws.String(stream)
	}
	_, err := c.DescribeStreamSummary(ctx, in, func(o *kinesis.Options) { o.RetryMaxAttempts = 1 })
	return streamError(err, stream, where)
}

// streamError says what a failed check of stream means and what to do.
func streamError(err error, stream, where string) error {
	if err == nil {
		return nil
	}
	var nf *types.ResourceNotFoundException
	var ae smithy.APIError
	var ne net.Error
	switch {
	case errors.As(err, &nf):
		return fmt.Errorf("the stream %q is not there (%s): check -stream (the stack's stream name or ARN) and the region; make run's stream is shardline-events at %s", stream, where, localKinesis)
	case errors.As(err, &ae) && (ae.ErrorCode() == "AccessDeniedException" || ae.ErrorCode() == "AccessDenied"):
		return nil // may still put records; the sends will say if not
	case errors.As(err, &ae):
		return fmt.Errorf("%s refused to describe the stream %q: %s: %s; check the credentials (AWS_PROFILE, AWS_ACCESS_KEY_ID) and the region", where, stream, ae.ErrorCode(), ae.ErrorMessage())
	case errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout():
		return fmt.Errorf("%s did not answer within %v: check the endpoint and the network (for make run's kinesalite, that make run is running: %s)", where, streamCheckTimeout, localKinesis)
	}
	return fmt.Errorf("cannot reach %s: %w; check the endpoint and the network, or for make run's kinesalite that make run is running (-endpoint %s)", where, err, localKinesis)
}

func isARN(s string) bool { return len(s) > 4 && s[:4] == "arn:" }
