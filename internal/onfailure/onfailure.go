// Package onfailure is the invocation record that Lambda sends to a Kinesis
// event source mapping's on-failure destination when it gives up on a
// batch: JSON that points at the batch's records in the stream (shard,
// first and last sequence number) without holding them. The local poller
// writes it, `shardline redrive` reads it.
package onfailure

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// Why Lambda gave up on a batch: requestContext.condition.
const (
	RetryAttemptsExhausted = "RetryAttemptsExhausted"
	RecordAgeExceeded      = "RecordAgeExceeded"
)

// Version is the record's format version.
const Version = "1.0"

// TimeLayout is how the record writes times: UTC, milliseconds.
const TimeLayout = "2006-01-02T15:04:05.000Z"

// Unhandled is responseContext.functionError when the function failed (an
// error, a crash, a timeout) rather than reporting batch item failures.
const Unhandled = "Unhandled"

// Record is an on-failure invocation record of a Kinesis event source
// mapping, in the JSON Lambda sends:
//
//	{"requestContext": {"requestId": "...", "functionArn": "...",
//	  "condition": "RetryAttemptsExhausted", "approximateInvokeCount": 3},
//	 "responseContext": {"statusCode": 200, "executedVersion": "$LATEST",
//	  "functionError": "Unhandled"},
//	 "version": "1.0", "timestamp": "2026-11-22T10:00:00.000Z",
//	 "KinesisBatchInfo": {"shardId": "shardId-000000000000",
//	  "startSequenceNumber": "...", "endSequenceNumber": "...",
//	  "approximateArrivalOfFirstRecord": "...",
//	  "approximateArrivalOfLastRecord": "...", "batchSize": 500,
//	  "streamArn": "arn:aws:kinesis:..."}}
type Record struct {
	RequestContext  RequestContext  `json:"requestContext"`
	ResponseContext ResponseContext `json:"responseContext"`
	Version         string          `json:"version"`
	Timestamp       string          `json:"timestamp"`
	// KinesisBatchInfo locates the records; a DynamoDB stream's record has
	// DDBStreamBatchInfo instead, and this is nil.
	KinesisBatchInfo *BatchInfo `json:"KinesisBatchInfo,omitempty"`
}

// RequestContext says which function gave up and why.
type RequestContext struct {
	RequestID              string `json:"requestId"`
	FunctionARN            string `json:"functionArn"`
	Condition              string `json:"condition"`
	ApproximateInvokeCount int    `json:"approximateInvokeCount"`
}

// ResponseContext is how the last invocation ended.
type ResponseContext struct {
	StatusCode      int    `json:"statusCode"`
	ExecutedVersion string `json:"executedVersion"`
	// FunctionError is "Unhandled" after a function error; null when the
	// function answered and reported the records as batch item failures.
	FunctionError *string `json:"functionError"`
}

// BatchInfo locates a batch in the stream: every record of the batch is in
// shard ShardID between StartSequenceNumber and EndSequenceNumber,
// inclusive.
type BatchInfo struct {
	ShardID                         string `json:"shardId"`
	StartSequenceNumber             string `json:"startSequenceNumber"`
	EndSequenceNumber               string `json:"endSequenceNumber"`
	ApproximateArrivalOfFirstRecord string `json:"approximateArrivalOfFirstRecord"`
	ApproximateArrivalOfLastRecord  string `json:"approximateArrivalOfLastRecord"`
	BatchSize                       int    `json:"batchSize"`
	StreamARN                       string `json:"streamArn"`
}

// Parse reads a record and checks that it locates a Kinesis batch.
func Parse(body []byte) (Record, error) {
	var r Record
	if err := json.Unmarshal(body, &r); err != nil {
		return r, fmt.Errorf("not an on-failure record: %w", err)
	}
	b := r.KinesisBatchInfo
	switch {
	case b == nil:
		return r, errors.New("not a Kinesis on-failure record: it has no KinesisBatchInfo")
	case b.StreamARN == "":
		return r, errors.New("KinesisBatchInfo.streamArn is empty")
	case b.ShardID == "":
		return r, errors.New("KinesisBatchInfo.shardId is empty")
	case !IsSequenceNumber(b.StartSequenceNumber):
		return r, fmt.Errorf("KinesisBatchInfo.startSequenceNumber %q is not a sequence number", b.StartSequenceNumber)
	case !IsSequenceNumber(b.EndSequenceNumber):
		return r, fmt.Errorf("KinesisBatchInfo.endSequenceNumber %q is not a sequence number", b.EndSequenceNumber)
	case CompareSequence(b.StartSequenceNumber, b.EndSequenceNumber) > 0:
		return r, fmt.Errorf("KinesisBatchInfo.startSequenceNumber %s is after endSequenceNumber %s", b.StartSequenceNumber, b.EndSequenceNumber)
	}
	return r, nil
}

// IsSequenceNumber says whether s is a Kinesis sequence number: decimal
// digits, without leading zeros.
func IsSequenceNumber(s string) bool {
	if s == "" || len(s) > 128 || (s[0] == '0' && len(s) > 1) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// CompareSequence orders two sequence numbers: -1, 0 or 1. They are decimal
// numbers of up to 128 bits, too long for an integer type, and shorter is
// smaller.
func CompareSequence(a, b string) int {
	switch {
	case len(a) < len(b):
		return -1
	case len(a) > len(b):
		return 1
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Batch is what the poller knows of a batch it gives up on.
type Batch struct {
	StreamARN, ShardID          string
	FirstSequence, LastSequence string
	FirstArrival, LastArrival   time.Time
	Size                        int
	Condition                   string
	Invocations                 int
	FunctionError               bool // the last invocation failed, rather than reporting items
	FunctionARN, RequestID      string
	At                          time.Time
}

// New is the record Lambda would send for b.
func New(b Batch) Record {
	r := Record{
		RequestContext: RequestContext{
			RequestID: b.RequestID, FunctionARN: b.FunctionARN,
			Condition: b.Condition, ApproximateInvokeCount: b.Invocations,
		},
		ResponseContext: ResponseContext{StatusCode: 200, ExecutedVersion: "$LATEST"},
		Version:         Version,
		Timestamp:       b.At.UTC().Format(TimeLayout),
		KinesisBatchInfo: &BatchInfo{
			ShardID:                         b.ShardID,
			StartSequenceNumber:             b.FirstSequence,
			EndSequenceNumber:               b.LastSequence,
			ApproximateArrivalOfFirstRecord: b.FirstArrival.UTC().Format(TimeLayout),
			ApproximateArrivalOfLastRecord:  b.LastArrival.UTC().Format(TimeLayout),
			BatchSize:                       b.Size,
			StreamARN:                       b.StreamARN,
		},
	}
	if b.FunctionError {
		r.ResponseContext.FunctionError = aws.String(Unhandled)
	}
	return r
}

// SQSAPI is the part of the SQS client a destination uses.
type SQSAPI interface {
	SendMessage(context.Context, *sqs.SendMessageInput, ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
}

// SQS is an on-failure destination queue.
type SQS struct {
	Client   SQSAPI
	QueueURL string
}

// Send puts r on the queue as a message whose body is its JSON.
func (q SQS) Send(ctx context.Context, r Record) error {
	body, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("on-failure record: %w", err)
	}
	if _, err := q.Client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(q.QueueURL), MessageBody: aws.String(string(body))}); err != nil {
		return fmt.Errorf("send on-failure record to %s: %w", q.QueueURL, err)
	}
	return nil
}
