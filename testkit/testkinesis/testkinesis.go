// Package testkinesis gives a test binary one kinesalite and a fresh stream
// per test. Start it with testddb.MainWith(m, testkinesis.Start); tests fail,
// never skip, when Node or kinesalite is missing.
package testkinesis

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/shardline/shardline/local/kinesislocal"
	"github.com/shardline/shardline/testkit/testddb"
)

var (
	engine  = testddb.NewRunning("kinesalite", "testddb.MainWith(m, testkinesis.Start)")
	streams atomic.Int64
)

// Start starts kinesalite; it is a testddb.Engine.
func Start(ctx context.Context) (func(), error) {
	s, err := kinesislocal.Start(ctx, kinesislocal.Options{})
	if err != nil {
		return nil, err
	}
	return engine.Hold(s.Proc), nil
}

// Endpoint is kinesalite's URL.
func Endpoint(t testing.TB) string {
	t.Helper()
	return engine.Endpoint(t)
}

// Client is a client of the Kinesis API at endpoint (kinesalite, or a proxy
// in front of it).
func Client(t testing.TB, endpoint string) *kinesis.Client {
	t.Helper()
	return kinesislocal.Client(endpoint)
}

// Stream creates a stream of shards shards for this test, deleted when it
// ends, and returns its ARN.
func Stream(t testing.TB, shards int) string {
	t.Helper()
	c := Client(t, Endpoint(t))
	name := fmt.Sprintf("s%d-%s", streams.Add(1), t.Name())
	name = sanitize(name)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	arn, err := kinesislocal.CreateStream(ctx, c, name, shards)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := c.DeleteStream(context.Background(), &kinesis.DeleteStreamInput{StreamName: aws.String(name)}); err != nil {
			t.Errorf("delete stream %s: %v", name, err)
		}
	})
	return arn
}

// sanitize keeps what a stream name may hold: [a-zA-Z0-9_.-], 128 at most.
func sanitize(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			b[i] = '-'
		}
	}
	return string(b[:min(len(b), 128)])
}

// Put writes data to the stream as records, in order, with PutRecords of
// at most 500 records, their partition keys spread over the shards, and
// sends again what a PutRecords did not take.
func Put(t testing.TB, c *kinesis.Client, arn string, data [][]byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for start := 0; start < len(data); start += 500 {
		var entries []types.PutRecordsRequestEntry
		for i, d := range data[start:min(start+500, len(data))] {
			entries = append(entries, types.PutRecordsRequestEntry{Data: d, PartitionKey: aws.String(fmt.Sprintf("pk-%d", start+i))})
		}
		for len(entries) > 0 {
			out, err := c.PutRecords(ctx, &kinesis.PutRecordsInput{StreamARN: aws.String(arn), StreamName: aws.String(streamName(arn)), Records: entries})
			if err != nil {
				t.Fatalf("put records: %v", err)
			}
			var again []types.PutRecordsRequestEntry
			for i, r := range out.Records {
				if r.ErrorCode != nil {
					again = append(again, entries[i])
				}
			}
			entries = again
		}
	}
}

func streamName(arn string) string {
	return arn[strings.LastIndexByte(arn, '/')+1:]
}
