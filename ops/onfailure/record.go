// Package onfailure is the invocation record that Lambda writes to an event
// source mapping's S3 on-failure destination when it gives up on a batch of
// a Kinesis stream or a DynamoDB stream: who gave up and why, where the
// batch was in its stream, and, under "payload", the batch's records
// themselves, as the function was invoked with them. The local pollers
// write it (S3), `shardline redrive` reads it back (Parse).
//
// The format is Lambda's (see testdata/ and docs/failed-batches.md for where
// it was checked):
//
//	{"requestContext": {"requestId": "...", "functionArn": "...",
//	  "condition": "RetryAttemptsExhausted", "approximateInvokeCount": 3},
//	 "responseContext": {"statusCode": 200, "executedVersion": "$LATEST",
//	  "functionError": "Unhandled"},
//	 "version": "1.0", "timestamp": "2026-11-22T10:00:00.000Z",
//	 "KinesisBatchInfo": {"shardId": "...", "startSequenceNumber": "...",
//	  "endSequenceNumber": "...", "approximateArrivalOfFirstRecord": "...",
//	  "approximateArrivalOfLastRecord": "...", "batchSize": 500,
//	  "streamArn": "arn:aws:kinesis:..."},
//	 "payload": {"Records": [...]}}
//
// A DynamoDB stream's record has DDBStreamBatchInfo (same fields, the
// table's stream ARN) instead of KinesisBatchInfo.
package onfailure

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/aws/aws-lambda-go/events"
)

// Why Lambda gave up on a batch: requestContext.condition.
const (
	RetryAttemptsExhausted = "RetryAttemptsExhausted"
	RecordAgeExceeded      = "RecordAgeExceeded"
)

// Version is the record's format version.
const Version = "1.0"

// TimeLayout is how the record writes its timestamp, and a Kinesis batch's
// arrival times: UTC, milliseconds.
const TimeLayout = "2006-01-02T15:04:05.000Z"

// StreamTimeLayout is how a DynamoDB stream batch's arrival times are
// written: UTC, whole seconds, as the stream records' creation times are.
const StreamTimeLayout = "2006-01-02T15:04:05Z"

// Unhandled is responseContext.functionError when the function failed (an
// error, a crash, a timeout) rather than reporting batch item failures.
const Unhandled = "Unhandled"

// Source is the kind of stream a batch came from.
type Source string

// The sources.
const (
	Kinesis  Source = "kinesis"
	DynamoDB Source = "dynamodb"
)

// Record is an on-failure invocation record, field for field in the order
// Lambda writes them.
type Record struct {
	RequestContext RequestContext `json:"requestContext"`
	// ResponseContext is how the last invocation ended; nil when Lambda
	// gave up without invoking the function (RecordAgeExceeded before the
	// first invocation).
	ResponseContext *ResponseContext `json:"responseContext,omitempty"`
	Version         string           `json:"version"`
	Timestamp       string           `json:"timestamp"`
	// Exactly one of KinesisBatchInfo and DDBStreamBatchInfo is set.
	KinesisBatchInfo   *BatchInfo `json:"KinesisBatchInfo,omitempty"`
	DDBStreamBatchInfo *BatchInfo `json:"DDBStreamBatchInfo,omitempty"`
	// Payload is the invocation's event, {"Records": [...]}: what an S3
	// destination receives and an SQS or SNS one does not. It is kept as
	// written, so that a record reads back to the same bytes; Kinesis and
	// DynamoDB decode it.
	Payload json.RawMessage `json:"payload,omitempty"`
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

// BatchInfo locates a batch in its stream: every record of the batch is in
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

// Source says which kind of stream the batch came from.
func (r Record) Source() Source {
	if r.DDBStreamBatchInfo != nil {
		return DynamoDB
	}
	return Kinesis
}

// Batch is the batch's location, whichever kind of stream it is in.
func (r Record) Batch() *BatchInfo {
	if r.DDBStreamBatchInfo != nil {
		return r.DDBStreamBatchInfo
	}
	return r.KinesisBatchInfo
}

// FunctionName is the name of the function that gave up, from
// requestContext.functionArn without a version or alias.
func (r Record) FunctionName() string { return FunctionName(r.RequestContext.FunctionARN) }

// FunctionName is the name in a function's ARN or the name itself, without
// a version or alias: "shardline-ingest" for
// "arn:aws:lambda:us-east-1:123456789012:function:shardline-ingest:live".
func FunctionName(arnOrName string) string {
	s := arnOrName
	if _, rest, ok := strings.Cut(s, ":function:"); ok {
		s = rest
	}
	name, _, _ := strings.Cut(s, ":")
	return name
}

// Kinesis decodes the payload of a Kinesis batch: the records the function
// was invoked with.
func (r Record) Kinesis() ([]events.KinesisEventRecord, error) {
	if r.Source() != Kinesis {
		return nil, fmt.Errorf("the record is of a %s batch, not a Kinesis one", r.Source())
	}
	var p struct {
		Records []events.KinesisEventRecord `json:"Records"`
	}
	if err := r.decode(&p); err != nil {
		return nil, err
	}
	return p.Records, nil
}

// DynamoDB decodes the payload of a DynamoDB stream batch.
func (r Record) DynamoDB() ([]events.DynamoDBEventRecord, error) {
	if r.Source() != DynamoDB {
		return nil, fmt.Errorf("the record is of a %s batch, not a DynamoDB stream one", r.Source())
	}
	var p struct {
		Records []events.DynamoDBEventRecord `json:"Records"`
	}
	if err := r.decode(&p); err != nil {
		return nil, err
	}
	return p.Records, nil
}

func (r Record) decode(v any) error {
	if len(r.Payload) == 0 || string(r.Payload) == "null" {
		return fmt.Errorf("the record has no payload: it holds no records (an SQS or SNS destination's record only locates its batch)")
	}
	if err := json.Unmarshal(r.Payload, v); err != nil {
		return fmt.Errorf("payload: %w", err)
	}
	return nil
}
