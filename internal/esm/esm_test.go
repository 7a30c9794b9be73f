package esm

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

func recs(n int) []events.KinesisEventRecord {
	var out []events.KinesisEventRecord
	for i := range n {
		out = append(out, events.KinesisEventRecord{Kinesis: events.KinesisRecord{SequenceNumber: fmt.Sprint(i)}})
	}
	return out
}

// TestRetriesFromLowestFailure: a reported failure resends that record and
// every later one, once per invocation, until it succeeds.
func TestRetriesFromLowestFailure(t *testing.T) {
	seen := map[string]int{}
	d := &Driver{BatchSize: 10, Timeout: time.Second, RetryAttempts: 5, Handler: func(_ context.Context, ev events.KinesisEvent) (events.KinesisEventResponse, error) {
		var resp events.KinesisEventResponse
		for _, r := range ev.Records {
			seen[r.Kinesis.SequenceNumber]++
			if r.Kinesis.SequenceNumber == "3" && seen["3"] < 3 {
				resp.BatchItemFailures = append(resp.BatchItemFailures, events.KinesisBatchItemFailure{ItemIdentifier: "3"})
			}
		}
		return resp, nil
	}}
	res := d.Run(context.Background(), recs(10))
	if len(res.Failed) != 0 || res.Invocations != 3 || seen["2"] != 1 || seen["3"] != 3 || seen["9"] != 3 {
		t.Fatalf("result %+v, seen %v", res, seen)
	}
}

// TestBisectIsolatesAPoisonRecord: a record that always crashes the
// function ends up alone in the on-failure destination.
func TestBisectIsolatesAPoisonRecord(t *testing.T) {
	d := &Driver{BatchSize: 8, Timeout: time.Second, RetryAttempts: 2, Bisect: true, Handler: func(_ context.Context, ev events.KinesisEvent) (events.KinesisEventResponse, error) {
		for _, r := range ev.Records {
			if r.Kinesis.SequenceNumber == "5" {
				panic("poison")
			}
		}
		return events.KinesisEventResponse{}, nil
	}}
	res := d.Run(context.Background(), recs(8))
	if len(res.Failed) != 1 || res.Failed[0].Kinesis.SequenceNumber != "5" {
		t.Fatalf("failed %v", res.Failed)
	}
	d.Bisect = false
	d.Handler = func(context.Context, events.KinesisEvent) (events.KinesisEventResponse, error) {
		return events.KinesisEventResponse{}, errors.New("down")
	}
	if res := d.Run(context.Background(), recs(8)); len(res.Failed) != 8 || res.Invocations != 3 {
		t.Fatalf("without bisect: %+v", res)
	}
}
