package faultproxy_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/shardline/shardline/local/kinesisread"
	"github.com/shardline/shardline/testkit/faultproxy"
	"github.com/shardline/shardline/testkit/testddb"
	"github.com/shardline/shardline/testkit/testkinesis"
)

func TestMain(m *testing.M) { testddb.MainWith(m, testkinesis.Start) }

// TestPutRecordsEntryFaults: through the proxy, the entries the rule picks
// come back failed with their ErrorCode, the others stored, in the
// request's order and with FailedRecordCount counting the failed; only the
// stored ones reach kinesalite, in order.
func TestPutRecordsEntryFaults(t *testing.T) {
	arn := testkinesis.Stream(t, 1)
	stream, err := kinesisread.ParseARN(arn)
	if err != nil {
		t.Fatal(err)
	}
	proxy := faultproxy.For(t, testkinesis.Endpoint(t))
	proxy.SetEntryFault(func(e faultproxy.Entry) string {
		switch {
		case e.N == 2:
			return faultproxy.EntryInternalFailure // the whole second request
		case e.Index%4 == 1:
			return faultproxy.EntryThrottled
		case e.Index%4 == 2 && string(e.Data) != "" && e.PartitionKey == "k":
			return faultproxy.EntryInternalFailure
		}
		return ""
	})
	// One attempt a request, so that the SDK's retries do not hide a fault.
	c := kinesis.New(testkinesis.Client(t, proxy.URL).Options(), func(o *kinesis.Options) { o.RetryMaxAttempts = 1 })
	put := func(n int, prefix string) *kinesis.PutRecordsOutput {
		in := &kinesis.PutRecordsInput{StreamName: aws.String(stream.Name)}
		for i := range n {
			in.Records = append(in.Records, types.PutRecordsRequestEntry{Data: fmt.Appendf(nil, "%s-%d", prefix, i), PartitionKey: aws.String("k")})
		}
		out, err := c.PutRecords(context.Background(), in)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	out := put(10, "a")
	var codes []string
	for _, r := range out.Records {
		if r.ErrorCode != nil {
			codes = append(codes, aws.ToString(r.ErrorCode))
			if r.SequenceNumber != nil || r.ErrorMessage == nil {
				t.Fatalf("failed entry %+v", r)
			}
			continue
		}
		codes = append(codes, "")
		if r.SequenceNumber == nil || aws.ToString(r.ShardId) != "shardId-000000000000" {
			t.Fatalf("stored entry %+v", r)
		}
	}
	T, I := faultproxy.EntryThrottled, faultproxy.EntryInternalFailure
	if want := []string{"", T, I, "", "", T, I, "", "", T}; !slices.Equal(codes, want) || aws.ToInt32(out.FailedRecordCount) != 5 {
		t.Fatalf("codes %q, %d failed", codes, aws.ToInt32(out.FailedRecordCount))
	}
	// Every entry failed: answered without reaching the stream.
	if out := put(3, "b"); aws.ToInt32(out.FailedRecordCount) != 3 || len(out.Records) != 3 {
		t.Fatalf("all failed: %d failed of %d", aws.ToInt32(out.FailedRecordCount), len(out.Records))
	}
	// A whole request throttled, in Kinesis's error shape.
	proxy.SetRule(func(r faultproxy.Request) (*faultproxy.Fault, faultproxy.Hold) {
		if r.Op == "PutRecords" {
			return faultproxy.Throttled, nil
		}
		return nil, nil
	})
	_, err = c.PutRecords(context.Background(), &kinesis.PutRecordsInput{StreamName: aws.String(stream.Name),
		Records: []types.PutRecordsRequestEntry{{Data: []byte("c"), PartitionKey: aws.String("k")}}})
	var throttled *types.ProvisionedThroughputExceededException
	if !errors.As(err, &throttled) {
		t.Fatalf("throttled request: %v, want ProvisionedThroughputExceededException", err)
	}

	// The stream holds the five stored, in order.
	direct := testkinesis.Client(t, testkinesis.Endpoint(t))
	it, err := kinesisread.Iterator(context.Background(), direct, stream, "shardId-000000000000", kinesisread.TrimHorizon)
	if err != nil {
		t.Fatal(err)
	}
	page, err := kinesisread.Read(context.Background(), direct, stream, "shardId-000000000000", it, 100)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range page.Records {
		got = append(got, string(r.Kinesis.Data))
	}
	if want := []string{"a-0", "a-3", "a-4", "a-7", "a-8"}; !slices.Equal(got, want) {
		t.Fatalf("stream holds %q, want %q", got, want)
	}
	if proxy.EntriesFailed.Load() != 8 || proxy.Faults.Load() != 1 || proxy.Count("PutRecords") != 3 {
		t.Fatalf("entries failed %d, faults %d, requests %d", proxy.EntriesFailed.Load(), proxy.Faults.Load(), proxy.Count("PutRecords"))
	}
}
