package ddbstreams

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	st "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"github.com/shardline/shardline/ops/onfailure"
)

// fakeStream is one closed shard holding recs: the logic of giving up
// needs no engine.
type fakeStream struct{ recs []st.Record }

func (f fakeStream) DescribeStream(context.Context, *dynamodbstreams.DescribeStreamInput, ...func(*dynamodbstreams.Options)) (*dynamodbstreams.DescribeStreamOutput, error) {
	return &dynamodbstreams.DescribeStreamOutput{StreamDescription: &st.StreamDescription{Shards: []st.Shard{{ShardId: aws.String("shardId-1")}}}}, nil
}

func (f fakeStream) GetShardIterator(context.Context, *dynamodbstreams.GetShardIteratorInput, ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetShardIteratorOutput, error) {
	return &dynamodbstreams.GetShardIteratorOutput{ShardIterator: aws.String("it")}, nil
}

func (f fakeStream) GetRecords(context.Context, *dynamodbstreams.GetRecordsInput, ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetRecordsOutput, error) {
	return &dynamodbstreams.GetRecordsOutput{Records: f.recs}, nil // no next iterator: the shard is closed
}

func records(n int, created time.Time) []st.Record {
	var out []st.Record
	for i := range n {
		out = append(out, st.Record{EventID: aws.String(fmt.Sprint(i)), EventName: st.OperationTypeInsert, Dynamodb: &st.StreamRecord{
			SequenceNumber: aws.String(fmt.Sprint(100 + i)), ApproximateCreationDateTime: aws.Time(created),
			Keys: map[string]st.AttributeValue{"pk": &st.AttributeValueMemberS{Value: "E#s#2026-11-22#0"}},
		}})
	}
	return out
}

// run polls recs with handler and retry until every record is processed.
func run(t *testing.T, recs []st.Record, retry *Retry, handler Handler) (*Poller, []onfailure.Record) {
	t.Helper()
	var mu sync.Mutex
	var sent []onfailure.Record
	retry.OnFailure = func(_ context.Context, r onfailure.Record) error {
		mu.Lock()
		defer mu.Unlock()
		sent = append(sent, r)
		return nil
	}
	p := &Poller{Client: fakeStream{recs}, StreamARN: "arn:aws:dynamodb:us-east-1:000000000000:table/t/stream/x", BatchSize: 100,
		Window: time.Millisecond, Idle: time.Millisecond, Retry: retry, Handler: handler}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	for deadline := time.Now().Add(30 * time.Second); p.Processed() < int64(len(recs)); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d records processed", p.Processed(), len(recs))
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	return p, sent
}

// TestBisectsAndGivesUpThePoisonRecord: a record the function always fails
// on is isolated by bisection, retried, and given up on alone, with its
// record in the on-failure record; every other record is delivered.
func TestBisectsAndGivesUpThePoisonRecord(t *testing.T) {
	delivered := map[string]int{}
	invocations := 0
	p, sent := run(t, records(8, time.Now()), &Retry{RetryAttempts: 1, Bisect: true, FunctionARN: "arn:aws:lambda:us-east-1:000000000000:function:f"},
		func(_ context.Context, ev events.DynamoDBTimeWindowEvent) error {
			invocations++
			for _, r := range ev.Records {
				if r.Change.SequenceNumber == "103" {
					return errors.New("poison")
				}
			}
			for _, r := range ev.Records {
				delivered[r.Change.SequenceNumber]++
			}
			return nil
		})
	if len(sent) != 1 || p.GivenUp() != 1 || p.Delivered() != 1 || len(delivered) != 7 || delivered["103"] != 0 {
		t.Fatalf("%d records given up in %d objects (%d sent), %d delivered", p.GivenUp(), p.Delivered(), len(sent), len(delivered))
	}
	r := sent[0]
	recs, err := r.DynamoDB()
	if err != nil || len(recs) != 1 || recs[0].Change.SequenceNumber != "103" || r.RequestContext.Condition != onfailure.RetryAttemptsExhausted ||
		r.RequestContext.ApproximateInvokeCount != 2 || *r.ResponseContext.FunctionError != onfailure.Unhandled ||
		r.Batch().ShardID != "shardId-1" || r.FunctionName() != "f" {
		t.Fatalf("on-failure record %+v %+v, %v", r.RequestContext, r.Batch(), err)
	}
}

// TestGivesUpWholeBatchWithoutBisect and on record age, without invoking
// the function for records already too old.
func TestGivesUpWholeBatchWithoutBisectAndOnAge(t *testing.T) {
	_, sent := run(t, records(5, time.Now()), &Retry{RetryAttempts: 2}, func(context.Context, events.DynamoDBTimeWindowEvent) error {
		return errors.New("down")
	})
	if len(sent) != 1 || sent[0].Batch().BatchSize != 5 || sent[0].RequestContext.ApproximateInvokeCount != 3 {
		t.Fatalf("without bisect: %d records, %+v", len(sent), sent)
	}
	invoked := false
	_, sent = run(t, records(5, time.Now().Add(-2*time.Hour)), &Retry{RetryAttempts: 2, MaxRecordAge: time.Hour},
		func(context.Context, events.DynamoDBTimeWindowEvent) error { invoked = true; return nil })
	if invoked || len(sent) != 1 || sent[0].RequestContext.Condition != onfailure.RecordAgeExceeded || sent[0].ResponseContext != nil {
		t.Fatalf("aged out: invoked %v, %+v", invoked, sent)
	}
}
