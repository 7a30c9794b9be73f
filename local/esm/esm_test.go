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

// TestGiveUpTellsWhy: each run given up on reaches OnGiveUp with its
// condition, how many invocations carried it and how the last ended.
func TestGiveUpTellsWhy(t *testing.T) {
	var got []GiveUp
	d := &Driver{BatchSize: 8, Timeout: time.Second, RetryAttempts: 2, Bisect: true,
		OnGiveUp: func(_ context.Context, g GiveUp) { got = append(got, g) },
		Handler: func(_ context.Context, ev events.KinesisEvent) (events.KinesisEventResponse, error) {
			var resp events.KinesisEventResponse
			for _, r := range ev.Records {
				switch r.Kinesis.SequenceNumber {
				case "2":
					return resp, errors.New("poison")
				case "6":
					resp.BatchItemFailures = append(resp.BatchItemFailures, events.KinesisBatchItemFailure{ItemIdentifier: "6"})
				}
			}
			return resp, nil
		}}
	res := d.Process(context.Background(), recs(8))
	if len(got) != 2 {
		t.Fatalf("gave up %d times: %+v", len(got), got)
	}
	poison, items := got[0], got[1]
	if len(poison.Records) != 1 || poison.Records[0].Kinesis.SequenceNumber != "2" || !poison.FunctionError ||
		poison.Condition != "RetryAttemptsExhausted" || poison.Invocations != 3 {
		t.Errorf("poison record: %+v", poison)
	}
	// 6 and 7 are resent from 6 on, three times in all.
	if len(items.Records) != 2 || items.Records[0].Kinesis.SequenceNumber != "6" || items.FunctionError || items.Invocations != 3 {
		t.Errorf("reported records: %+v", items)
	}
	if len(res.Failed) != 3 {
		t.Errorf("failed %v", res.Failed)
	}
}

// TestRecordAge: records older than MaxRecordAge are given up on without
// an invocation; a retry that outlives the age gives up on the rest.
func TestRecordAge(t *testing.T) {
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	records := recs(4)
	for i := range records {
		records[i].Kinesis.ApproximateArrivalTimestamp = events.SecondsEpochTime{Time: now.Add(time.Duration(i-2) * time.Minute)}
	}
	var got []GiveUp
	invoked := 0
	d := &Driver{BatchSize: 4, Timeout: time.Second, RetryAttempts: -1, MaxRecordAge: 90 * time.Second,
		Now:      func() time.Time { return now },
		OnGiveUp: func(_ context.Context, g GiveUp) { got = append(got, g) },
		Handler: func(_ context.Context, ev events.KinesisEvent) (events.KinesisEventResponse, error) {
			invoked++
			if invoked == 3 {
				now = now.Add(time.Hour) // the retries took an hour
			}
			return events.KinesisEventResponse{}, errors.New("down")
		}}
	d.Process(context.Background(), records)
	if len(got) != 2 || got[0].Condition != "RecordAgeExceeded" || len(got[0].Records) != 1 || got[0].Invocations != 0 ||
		got[1].Condition != "RecordAgeExceeded" || len(got[1].Records) != 3 || got[1].Invocations != 3 || invoked != 3 {
		t.Fatalf("invoked %d, gave up %+v", invoked, got)
	}
}
