package kinesisread

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"
)

func TestParseARN(t *testing.T) {
	a, err := ParseARN("arn:aws:kinesis:eu-west-1:000000000000:stream/events")
	if err != nil || a.Region != "eu-west-1" || a.Account != "000000000000" || a.Name != "events" {
		t.Fatalf("%+v %v", a, err)
	}
	for _, bad := range []string{"", "events", "arn:aws:sqs:eu-west-1:000000000000:q", "arn:aws:kinesis:eu-west-1:000000000000:stream/",
		"arn:aws:kinesis:eu-west-1:000000000000:table/x"} {
		if _, err := ParseARN(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

// shard is a fake shard: records with sequence numbers from first on, two
// a page; what only logic decides (no engine can trim on demand).
type shard struct {
	API
	first, n int
}

func (s *shard) GetShardIterator(_ context.Context, in *kinesis.GetShardIteratorInput, _ ...func(*kinesis.Options)) (*kinesis.GetShardIteratorOutput, error) {
	var at int
	fmt.Sscan(aws.ToString(in.StartingSequenceNumber), &at)
	// A trimmed sequence number starts at the trim horizon.
	return &kinesis.GetShardIteratorOutput{ShardIterator: aws.String(fmt.Sprint(max(at, s.first)))}, nil
}

func (s *shard) GetRecords(_ context.Context, in *kinesis.GetRecordsInput, _ ...func(*kinesis.Options)) (*kinesis.GetRecordsOutput, error) {
	var at int
	fmt.Sscan(aws.ToString(in.ShardIterator), &at)
	out := &kinesis.GetRecordsOutput{NextShardIterator: aws.String(fmt.Sprint(min(at+2, s.first+s.n))), MillisBehindLatest: aws.Int64(1)}
	for seq := at; seq < min(at+2, s.first+s.n); seq++ {
		now := time.Now()
		out.Records = append(out.Records, types.Record{SequenceNumber: aws.String(fmt.Sprint(seq)), Data: []byte("x"), ApproximateArrivalTimestamp: &now})
	}
	if at >= s.first+s.n {
		out.MillisBehindLatest = aws.Int64(0)
	}
	return out, nil
}

// TestRange reads a range over several pages, and tells a trimmed start
// and a range past the shard's end apart.
func TestRange(t *testing.T) {
	ctx := context.Background()
	stream, _ := ParseARN("arn:aws:kinesis:us-east-1:000000000000:stream/s")
	s := &shard{first: 100, n: 10}
	got, err := Range(ctx, s, stream, "shardId-0", "101", "106")
	if err != nil || len(got) != 6 || got[0].Kinesis.SequenceNumber != "101" || got[5].Kinesis.SequenceNumber != "106" ||
		got[0].EventID != "shardId-0:101" {
		t.Fatalf("%d records, %v", len(got), err)
	}
	_, err = Range(ctx, s, stream, "shardId-0", "95", "101")
	var gone *GoneError
	if !errors.As(err, &gone) || gone.FirstLeft != "100" || !strings.Contains(err.Error(), "the oldest record it still holds is 100") {
		t.Fatalf("trimmed start: %v", err)
	}
	if _, err := Range(ctx, s, stream, "shardId-0", "105", "120"); err == nil || errors.As(err, &gone) ||
		!strings.Contains(err.Error(), "ends at 109, before the batch's last record 120") {
		t.Fatalf("past the end: %v", err)
	}
}
