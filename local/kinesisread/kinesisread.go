// Package kinesisread reads a Kinesis stream with the Kinesis API (ListShards,
// GetShardIterator, GetRecords) and turns its records into the
// events.KinesisEventRecord that Lambda hands a function, with the real
// sequence numbers and arrival times. The local poller reads the stream
// with it, and tests read a range of it back (Range).
package kinesisread

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/shardline/shardline/ops/onfailure"
)

// API is the part of the Kinesis client a reader uses.
type API interface {
	ListShards(context.Context, *kinesis.ListShardsInput, ...func(*kinesis.Options)) (*kinesis.ListShardsOutput, error)
	GetShardIterator(context.Context, *kinesis.GetShardIteratorInput, ...func(*kinesis.Options)) (*kinesis.GetShardIteratorOutput, error)
	GetRecords(context.Context, *kinesis.GetRecordsInput, ...func(*kinesis.Options)) (*kinesis.GetRecordsOutput, error)
	DescribeStreamSummary(context.Context, *kinesis.DescribeStreamSummaryInput, ...func(*kinesis.Options)) (*kinesis.DescribeStreamSummaryOutput, error)
}

var _ API = (*kinesis.Client)(nil)

// ARN is a stream's ARN taken apart.
type ARN struct {
	Full, Region, Account, Name string
}

// ParseARN reads arn:aws:kinesis:REGION:ACCOUNT:stream/NAME.
func ParseARN(arn string) (ARN, error) {
	parts := strings.SplitN(arn, ":", 6)
	if len(parts) != 6 || parts[0] != "arn" || parts[2] != "kinesis" || !strings.HasPrefix(parts[5], "stream/") || len(parts[5]) == len("stream/") {
		return ARN{}, fmt.Errorf("%q is not a Kinesis stream ARN (arn:aws:kinesis:REGION:ACCOUNT:stream/NAME)", arn)
	}
	return ARN{Full: arn, Region: parts[3], Account: parts[4], Name: strings.TrimPrefix(parts[5], "stream/")}, nil
}

// Event is the record Lambda hands a function for r, read from shardID of
// stream.
func Event(r types.Record, stream ARN, shardID string) events.KinesisEventRecord {
	seq := aws.ToString(r.SequenceNumber)
	out := events.KinesisEventRecord{
		AwsRegion:      stream.Region,
		EventID:        shardID + ":" + seq,
		EventName:      "aws:kinesis:record",
		EventSource:    "aws:kinesis",
		EventSourceArn: stream.Full,
		EventVersion:   "1.0",
		Kinesis: events.KinesisRecord{
			Data:                 r.Data,
			EncryptionType:       string(r.EncryptionType),
			PartitionKey:         aws.ToString(r.PartitionKey),
			SequenceNumber:       seq,
			KinesisSchemaVersion: "1.0",
		},
	}
	if r.ApproximateArrivalTimestamp != nil {
		out.Kinesis.ApproximateArrivalTimestamp = events.SecondsEpochTime{Time: r.ApproximateArrivalTimestamp.UTC()}
	}
	return out
}

// Shards lists the stream's shards, parents before children.
func Shards(ctx context.Context, c API, stream ARN) ([]types.Shard, error) {
	var shards []types.Shard
	in := &kinesis.ListShardsInput{StreamName: aws.String(stream.Name), StreamARN: aws.String(stream.Full)}
	for {
		out, err := c.ListShards(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("list shards of %s: %w", stream.Full, err)
		}
		shards = append(shards, out.Shards...)
		if out.NextToken == nil {
			return shards, nil
		}
		// With a NextToken the stream must not be named again.
		in = &kinesis.ListShardsInput{NextToken: out.NextToken}
	}
}

// Position is where an iterator starts.
type Position struct {
	Type     types.ShardIteratorType
	Sequence string // for AT_ and AFTER_SEQUENCE_NUMBER
}

// TrimHorizon is the oldest record the shard still holds.
var TrimHorizon = Position{Type: types.ShardIteratorTypeTrimHorizon}

// At is the record with sequence number seq.
func At(seq string) Position {
	return Position{Type: types.ShardIteratorTypeAtSequenceNumber, Sequence: seq}
}

// After is the record after seq.
func After(seq string) Position {
	return Position{Type: types.ShardIteratorTypeAfterSequenceNumber, Sequence: seq}
}

// Iterator is a shard iterator at p.
func Iterator(ctx context.Context, c API, stream ARN, shardID string, p Position) (*string, error) {
	in := &kinesis.GetShardIteratorInput{
		StreamName: aws.String(stream.Name), StreamARN: aws.String(stream.Full),
		ShardId: aws.String(shardID), ShardIteratorType: p.Type,
	}
	if p.Sequence != "" {
		in.StartingSequenceNumber = aws.String(p.Sequence)
	}
	out, err := c.GetShardIterator(ctx, in)
	if err != nil {
		return nil, fmt.Errorf("shard iterator of %s %s at %s %s: %w", stream.Name, shardID, p.Type, p.Sequence, err)
	}
	return out.ShardIterator, nil
}

// Page is one GetRecords answer.
type Page struct {
	Records []events.KinesisEventRecord
	// Next reads on; nil once a closed shard is read to its end.
	Next *string
	// AtTip is true when the page reached the newest record of the shard.
	AtTip bool
}

// Read gets a page of at most limit records (at most 10,000) from it.
func Read(ctx context.Context, c API, stream ARN, shardID string, it *string, limit int) (Page, error) {
	out, err := c.GetRecords(ctx, &kinesis.GetRecordsInput{
		ShardIterator: it, StreamARN: aws.String(stream.Full), Limit: aws.Int32(int32(min(max(limit, 1), 10000))),
	})
	if err != nil {
		return Page{}, fmt.Errorf("get records of %s %s: %w", stream.Name, shardID, err)
	}
	p := Page{Next: out.NextShardIterator, AtTip: aws.ToInt64(out.MillisBehindLatest) == 0, Records: make([]events.KinesisEventRecord, len(out.Records))}
	for i, r := range out.Records {
		p.Records[i] = Event(r, stream, shardID)
	}
	return p, nil
}

// GoneError says that a batch's records are no longer in the stream: the
// stream trimmed them at its retention period, or the shard or the stream
// is gone.
type GoneError struct {
	Shard, Start string
	// Arrived and Retention, when set, say why: the first record arrived
	// longer ago than the stream keeps records.
	Arrived   time.Time
	Retention time.Duration
	// FirstLeft is the oldest sequence number the shard still holds, when
	// it holds any.
	FirstLeft string
	Err       error
}

// Error says where the records were and what the stream holds now.
func (e *GoneError) Error() string {
	switch {
	case !e.Arrived.IsZero():
		return fmt.Sprintf("the records from %s of %s have left the stream: the first arrived %s and the stream keeps records %v, so it trimmed them at %s",
			e.Start, e.Shard, e.Arrived.UTC().Format(time.RFC3339), e.Retention, e.Arrived.Add(e.Retention).UTC().Format(time.RFC3339))
	case e.Err != nil && e.Start == "":
		return fmt.Sprintf("%s is gone: %v", e.Shard, e.Err)
	case e.Err != nil:
		return fmt.Sprintf("the records from %s of %s have left the stream: %v", e.Start, e.Shard, e.Err)
	case e.FirstLeft != "":
		return fmt.Sprintf("the records from %s of %s have left the stream (trimmed at its retention period): the oldest record it still holds is %s", e.Start, e.Shard, e.FirstLeft)
	}
	return fmt.Sprintf("the records from %s of %s have left the stream (trimmed at its retention period): the shard holds none of them", e.Start, e.Shard)
}

// Unwrap is the API's error, when it refused the shard or stream.
func (e *GoneError) Unwrap() error { return e.Err }

// Range reads the records of shardID from start to end, inclusive, as a
// given-up batch's KinesisBatchInfo gives them: GetShardIterator
// AT_SEQUENCE_NUMBER start, then GetRecords until past end. It returns a
// *GoneError when the stream no longer holds start.
func Range(ctx context.Context, c API, stream ARN, shardID, start, end string) ([]events.KinesisEventRecord, error) {
	it, err := Iterator(ctx, c, stream, shardID, At(start))
	var notFound *types.ResourceNotFoundException
	if errors.As(err, &notFound) {
		return nil, &GoneError{Shard: shardID, Start: start, Err: err}
	}
	if err != nil {
		return nil, err
	}
	var out []events.KinesisEventRecord
	idle := 0
	for {
		p, err := Read(ctx, c, stream, shardID, it, 10000)
		var expired *types.ExpiredIteratorException
		if errors.As(err, &expired) && len(out) > 0 {
			// A long read outlived its iterator (5 minutes): go on after the
			// last record read.
			if it, err = Iterator(ctx, c, stream, shardID, After(out[len(out)-1].Kinesis.SequenceNumber)); err != nil {
				return nil, err
			}
			continue
		}
		if err != nil {
			return nil, err
		}
		for _, r := range p.Records {
			seq := r.Kinesis.SequenceNumber
			if len(out) == 0 && onfailure.CompareSequence(seq, start) != 0 {
				// AT_SEQUENCE_NUMBER of a trimmed record starts at the trim
				// horizon, past it.
				return nil, &GoneError{Shard: shardID, Start: start, FirstLeft: seq}
			}
			if onfailure.CompareSequence(seq, end) > 0 {
				return out, nil
			}
			out = append(out, r)
			if onfailure.CompareSequence(seq, end) == 0 {
				return out, nil
			}
		}
		if len(p.Records) == 0 && p.AtTip {
			idle++
		}
		if p.Next == nil || idle >= 3 {
			if len(out) == 0 {
				return nil, &GoneError{Shard: shardID, Start: start}
			}
			return nil, fmt.Errorf("%s of %s ends at %s, before the batch's last record %s: the batch record does not match this stream",
				shardID, stream.Name, out[len(out)-1].Kinesis.SequenceNumber, end)
		}
		it = p.Next
	}
}
