package devserver

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/shardline/shardline/internal/archive"
	"github.com/shardline/shardline/internal/backoff"
	"github.com/shardline/shardline/internal/item"
	"github.com/shardline/shardline/local/ddbstreams"
)

// LocalArchiveWindow is the local archive's batching window: shorter than
// the stack's, so that the samples reach the archive directory at once.
const LocalArchiveWindow = time.Second

// startArchive runs the archive function on the table's stream, as the
// stack's event source mapping does: inserted or rewritten events, batched,
// retried a bounded number of times, then given up to the on-failure
// bucket. A directory stands in for the archive bucket, so that its objects
// are files to look at: under dbDir when the data is kept, else a temporary
// one, which it returns. It stops with ctx.
func startArchive(ctx context.Context, out io.Writer, client *dynamodb.Client, endpoint, table, dbDir string, fb failed, log *slog.Logger) (string, error) {
	arn, err := ddbstreams.StreamARN(ctx, client, table)
	if err != nil {
		return "", fmt.Errorf("archive: %w", err)
	}
	dir := filepath.Join(dbDir, "archive")
	if dbDir == "" {
		if dir, err = os.MkdirTemp("", "shardline-archive-"); err != nil {
			return "", fmt.Errorf("archive directory: %w", err)
		}
	}
	f := &archive.Function{Store: archive.Dir(dir), Log: log}
	p := &ddbstreams.Poller{
		Client:    ddbstreams.Static(endpoint),
		StreamARN: arn,
		Window:    LocalArchiveWindow,
		BatchSize: 1000,
		Log:       log,
		Filter:    func(r events.DynamoDBEventRecord) bool { return item.IsEventChange(r, "INSERT", "MODIFY") },
		Retry:     fb.retry(LocalArchiveFunction, LocalArchiveMapping),
		Handler: func(ctx context.Context, ev events.DynamoDBTimeWindowEvent) error {
			return f.Invoke(ctx, events.DynamoDBEvent{Records: ev.Records})
		},
	}
	go p.Run(ctx)
	fmt.Fprintf(out, "archive function polling the table's stream, writing %sbucket=<NN>/day=<day>/... to %s (a directory stands in for the archive bucket; \"shardline archive query -source S\" gives a source's NN)\n",
		archive.LayoutPrefix, dir)
	return dir, nil
}

// archived prints how many of the stored events the archive holds once it
// holds them all (at most a few seconds), or after 15 seconds.
func archived(ctx context.Context, out io.Writer, dir string, stored int) error {
	for wait := time.Now(); ; {
		events, objects, err := countArchive(dir)
		if err != nil {
			return err
		}
		if events >= stored || time.Since(wait) > 15*time.Second || ctx.Err() != nil {
			fmt.Fprintf(out, "\narchived %d of %d stored events in %d gzip JSON-lines objects under %s\n", events, stored, objects, dir)
			return nil
		}
		backoff.Sleep(ctx, 200*time.Millisecond) // an interruption ends the wait at the check above
	}
}

// countArchive counts the archive's objects under dir and the lines in them.
func countArchive(dir string) (events, objects int, err error) {
	err = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".json.gz") {
			return err
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		zr, err := gzip.NewReader(f)
		if err != nil {
			return fmt.Errorf("archive %s: %w", path, err)
		}
		b, err := io.ReadAll(zr)
		if err != nil {
			return fmt.Errorf("archive %s: %w", path, err)
		}
		objects++
		events += bytes.Count(b, []byte("\n"))
		return nil
	})
	return events, objects, err
}
