package redrive

import (
	"context"
	"fmt"

	"github.com/aws/aws-lambda-go/events"
)

// ingestWith stores a Kinesis batch's records through the ingest handler h, in
// invocations of at most BatchSize records. After a partial failure only
// the reported records are sent again; a record's time, when its event has
// none, is its arrival time, the same on every replay.
func ingestWith(ctx context.Context, o Options, h KinesisHandler, recs []events.KinesisEventRecord) (int, error) {
	done := 0
	for start := 0; start < len(recs); start += o.BatchSize {
		chunk := recs[start:min(start+o.BatchSize, len(recs))]
		pending := chunk
		_, err := retry(ctx, o, func(ctx context.Context) (int, error) {
			resp, err := h(ctx, events.KinesisEvent{Records: append([]events.KinesisEventRecord(nil), pending...)})
			if err != nil {
				return 0, fmt.Errorf("the ingest handler failed: %w", err)
			}
			if len(resp.BatchItemFailures) > 0 {
				pending = reported(pending, resp.BatchItemFailures)
				return 0, fmt.Errorf("%d records not stored for now (throttled or unavailable table, or the deadline)", len(pending))
			}
			return len(chunk), nil
		})
		if err != nil {
			return done, err
		}
		done += len(chunk)
	}
	return done, nil
}

// reported keeps the records a response names; a name that matches no
// record keeps them all, as Lambda would.
func reported(batch []events.KinesisEventRecord, failures []events.KinesisBatchItemFailure) []events.KinesisEventRecord {
	want := map[string]bool{}
	for _, f := range failures {
		want[f.ItemIdentifier] = true
	}
	var out []events.KinesisEventRecord
	for _, r := range batch {
		if want[r.Kinesis.SequenceNumber] {
			out = append(out, r)
			delete(want, r.Kinesis.SequenceNumber)
		}
	}
	if len(want) > 0 {
		return batch
	}
	return out
}
