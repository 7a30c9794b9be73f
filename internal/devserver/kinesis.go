package devserver

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/shardline/shardline/internal/ingest"
	"github.com/shardline/shardline/internal/kinesislocal"
	"github.com/shardline/shardline/internal/kinesispoll"
	"github.com/shardline/shardline/internal/onfailure"
	"github.com/shardline/shardline/internal/sqslocal"
)

// The local event source mapping runs with the stack's defaults
// (infra/shardline Props): what works locally is what the stack deploys.
const (
	LocalBatchSize     = 500
	LocalWindow        = time.Second
	LocalRetryAttempts = 10
	LocalMaxRecordAge  = 24 * time.Hour
	LocalTimeout       = 60 * time.Second // the ingest function's
)

// FailedQueue is the local on-failure queue's name.
const FailedQueue = "shardline-failed-batches"

// Kinesis is what the local Kinesis path runs on, for the printout and
// for tests.
type Kinesis struct {
	Endpoint  string // kinesalite
	StreamARN string
	Stream    string
	SQS       string // the local SQS
	QueueURL  string // the on-failure queue
	Poller    *kinesispoll.Poller
}

// startKinesis starts kinesalite and a local SQS, makes the stream and the
// on-failure queue, and runs the ingest function on the stream as the
// stack's event source mapping does. stop ends the poller, then both
// engines.
func startKinesis(ctx context.Context, out io.Writer, o Options, h *ingest.Handler, log *slog.Logger) (k Kinesis, stop func(), err error) {
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
	fmt.Fprintln(out, "starting kinesalite and the local SQS ...")
	kin, err := kinesislocal.Start(ctx, kinesislocal.Options{Port: o.KinesisPort})
	if err != nil {
		return k, stop, fmt.Errorf("kinesalite: %w (choose another port with -kinesis-port)", err)
	}
	stops = append(stops, func() { kin.Close(); fmt.Fprintln(out, "stopped kinesalite") })
	q, err := sqslocal.Start(ctx, sqslocal.Options{Port: o.SQSPort})
	if err != nil {
		return k, stop, fmt.Errorf("local SQS: %w (choose another port with -sqs-port)", err)
	}
	stops = append(stops, func() { q.Close(); fmt.Fprintln(out, "stopped the local SQS") })

	k = Kinesis{Endpoint: kin.Endpoint, SQS: q.Endpoint, Stream: o.Stream}
	kc := kinesislocal.Client(kin.Endpoint)
	if k.StreamARN, err = kinesislocal.CreateStream(ctx, kc, o.Stream, 1); err != nil {
		return k, stop, err
	}
	qc := sqslocal.Client(q.Endpoint)
	if k.QueueURL, err = sqslocal.CreateQueue(ctx, qc, FailedQueue); err != nil {
		return k, stop, err
	}
	k.Poller = &kinesispoll.Poller{
		Client: kc, StreamARN: k.StreamARN, Handler: h.Kinesis,
		BatchSize: LocalBatchSize, Window: LocalWindow, Timeout: LocalTimeout,
		RetryAttempts: LocalRetryAttempts, Bisect: true, MaxRecordAge: LocalMaxRecordAge,
		OnFailure: onfailure.SQS{Client: qc, QueueURL: k.QueueURL}.Send,
		Log:       log,
	}
	pctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- k.Poller.Run(pctx) }()
	stops = append(stops, func() { cancel(); <-done })

	fmt.Fprintf(out, "Kinesis (kinesalite) at %s: stream %s (%s)\n", k.Endpoint, k.Stream, k.StreamARN)
	fmt.Fprintf(out, "ingest function polling it as the stack's event source mapping does (batches of %d, %v window, %d retries, bisect on error);\n"+
		"  batches given up on go to the SQS queue %s\n", LocalBatchSize, LocalWindow, LocalRetryAttempts, k.QueueURL)
	return k, stop, nil
}
