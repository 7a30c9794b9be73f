package devserver

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/shardline/shardline/internal/ingest"
	"github.com/shardline/shardline/local/kinesislocal"
	"github.com/shardline/shardline/local/kinesispoll"
)

// The local event source mapping runs with the stack's defaults
// (infra/shardline Props): what works locally is what the stack deploys.
const (
	LocalBatchSize     = 500
	LocalWindow        = time.Second
	LocalRetryAttempts = 10
	LocalMaxRecordAge  = 6 * time.Hour
	LocalTimeout       = 60 * time.Second // the ingest function's
)

// Kinesis is what the local Kinesis path runs on, for the printout and
// for tests.
type Kinesis struct {
	Endpoint  string // kinesalite
	StreamARN string
	Stream    string
	S3        string // the local S3
	Bucket    string // the on-failure bucket in it
	Poller    *kinesispoll.Poller
}

// startKinesis starts kinesalite, makes the stream, and runs the ingest
// function on it as the stack's event source mapping does, giving batches
// up to the on-failure bucket. stop ends the poller, then kinesalite.
func startKinesis(ctx context.Context, out io.Writer, o Options, h *ingest.Handler, fb failed, log *slog.Logger) (k Kinesis, stop func(), err error) {
	var stops []func()
	stop = func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}
	defer func() {
		if err != nil {
			stop()
		}
	}()
	fmt.Fprintln(out, "starting kinesalite ...")
	kin, err := kinesislocal.Start(ctx, kinesislocal.Options{Port: o.KinesisPort})
	if err != nil {
		return k, stop, fmt.Errorf("kinesalite: %w (choose another port with -kinesis-port)", err)
	}
	stops = append(stops, func() { kin.Close(); fmt.Fprintln(out, "stopped kinesalite") })

	k = Kinesis{Endpoint: kin.Endpoint, S3: fb.endpoint, Bucket: FailedBucket, Stream: o.Stream}
	kc := kinesislocal.Client(kin.Endpoint)
	if k.StreamARN, err = kinesislocal.CreateStream(ctx, kc, o.Stream, 1); err != nil {
		return k, stop, err
	}
	k.Poller = &kinesispoll.Poller{
		Client: kc, StreamARN: k.StreamARN, Handler: h.Kinesis,
		BatchSize: LocalBatchSize, Window: LocalWindow, Timeout: LocalTimeout,
		RetryAttempts: LocalRetryAttempts, Bisect: true, MaxRecordAge: LocalMaxRecordAge,
		OnFailure:   fb.destination(LocalIngestMapping).Put,
		FunctionARN: localFunctionARN(LocalIngestFunction),
		Log:         log,
	}
	pctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- k.Poller.Run(pctx) }()
	stops = append(stops, func() { cancel(); <-done })

	fmt.Fprintf(out, "Kinesis (kinesalite) at %s: stream %s (%s)\n", k.Endpoint, k.Stream, k.StreamARN)
	fmt.Fprintf(out, "ingest function polling it as the stack's event source mapping does (batches of %d, %v window, %d retries, bisect on error);\n"+
		"  batches given up on go, records included, to the local S3 bucket %s\n", LocalBatchSize, LocalWindow, LocalRetryAttempts, k.Bucket)
	return k, stop, nil
}
