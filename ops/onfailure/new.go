package onfailure

import (
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
)

// GiveUp is what a poller knows of a batch it gives up on, besides the
// records.
type GiveUp struct {
	StreamARN, ShardID string
	Condition          string // RetryAttemptsExhausted or RecordAgeExceeded
	// Invocations is how often the function was invoked with these
	// records; 0 when they aged out before it ever was.
	Invocations int
	// FunctionError: the last invocation failed, rather than reporting
	// batch item failures.
	FunctionError          bool
	FunctionARN, RequestID string
	At                     time.Time
}

// NewKinesis is the record Lambda writes for a Kinesis batch it gave up on.
func NewKinesis(g GiveUp, recs []events.KinesisEventRecord) (Record, error) {
	if len(recs) == 0 {
		return Record{}, errors.New("on-failure record: no records")
	}
	first, last := recs[0].Kinesis, recs[len(recs)-1].Kinesis
	r := g.record()
	r.KinesisBatchInfo = &BatchInfo{
		ShardID:                         g.ShardID,
		StartSequenceNumber:             first.SequenceNumber,
		EndSequenceNumber:               last.SequenceNumber,
		ApproximateArrivalOfFirstRecord: ArrivalTime(first.ApproximateArrivalTimestamp.Time),
		ApproximateArrivalOfLastRecord:  ArrivalTime(last.ApproximateArrivalTimestamp.Time),
		BatchSize:                       len(recs),
		StreamARN:                       g.StreamARN,
	}
	return r, r.setPayload(recs)
}

// NewDynamoDB is the record Lambda writes for a DynamoDB stream batch it
// gave up on.
func NewDynamoDB(g GiveUp, recs []events.DynamoDBEventRecord) (Record, error) {
	if len(recs) == 0 {
		return Record{}, errors.New("on-failure record: no records")
	}
	first, last := recs[0].Change, recs[len(recs)-1].Change
	r := g.record()
	r.DDBStreamBatchInfo = &BatchInfo{
		ShardID:                         g.ShardID,
		StartSequenceNumber:             first.SequenceNumber,
		EndSequenceNumber:               last.SequenceNumber,
		ApproximateArrivalOfFirstRecord: first.ApproximateCreationDateTime.UTC().Format(StreamTimeLayout),
		ApproximateArrivalOfLastRecord:  last.ApproximateCreationDateTime.UTC().Format(StreamTimeLayout),
		BatchSize:                       len(recs),
		StreamARN:                       g.StreamARN,
	}
	return r, r.setPayload(recs)
}

// ArrivalTime spells a Kinesis record's arrival time as a batch info
// does. It rounds to the millisecond: Lambda's events carry the time as
// float seconds, which read back a hair off.
func ArrivalTime(t time.Time) string { return t.UTC().Round(time.Millisecond).Format(TimeLayout) }

func (g GiveUp) record() Record {
	r := Record{
		RequestContext: RequestContext{
			RequestID: g.RequestID, FunctionARN: g.FunctionARN,
			Condition: g.Condition, ApproximateInvokeCount: g.Invocations,
		},
		Version:   Version,
		Timestamp: g.At.UTC().Format(TimeLayout),
	}
	if r.RequestContext.RequestID == "" {
		r.RequestContext.RequestID = RandomUUID()
	}
	if g.Invocations > 0 {
		r.ResponseContext = &ResponseContext{StatusCode: 200, ExecutedVersion: "$LATEST"}
		if g.FunctionError {
			r.ResponseContext.FunctionError = aws.String(Unhandled)
		}
	}
	return r
}

func (r *Record) setPayload(recs any) error {
	b, err := json.Marshal(map[string]any{"Records": recs})
	if err != nil {
		return fmt.Errorf("on-failure record payload: %w", err)
	}
	r.Payload = b
	return nil
}

// RandomUUID is a random (version 4) UUID, as Lambda's request ids and the
// suffixes of its object keys are.
func RandomUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
