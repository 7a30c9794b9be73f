//go:build unix

package ingest

import (
	"context"
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/shardline/shardline/internal/ddbclient"
)

// answerHTTP answers every DynamoDB call at once with success and nothing
// unprocessed, after reading the request body as a server would.
type answerHTTP struct{}

func (answerHTTP) Do(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		io.Copy(io.Discard, r.Body)
		r.Body.Close()
	}
	body := `{}`
	if strings.HasSuffix(r.Header.Get("X-Amz-Target"), ".BatchWriteItem") {
		body = `{"UnprocessedItems":{},"ConsumedCapacity":[{"TableName":"bench","CapacityUnits":50}]}`
	}
	return &http.Response{StatusCode: 200, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:        http.Header{"Content-Type": []string{"application/x-amz-json-1.0"}},
		ContentLength: int64(len(body)), Body: io.NopCloser(strings.NewReader(body)), Request: r}, nil
}

// sdkSerialiser is a store that sends BatchWriteItem with the SDK's own
// serialiser, whatever protocol the writer's options install: the
// baseline of the writer's encoder.
type sdkSerialiser struct{ *dynamodb.Client }

func (c sdkSerialiser) BatchWriteItem(ctx context.Context, in *dynamodb.BatchWriteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error) {
	sdk := c.Client.Options().Protocol
	return c.Client.BatchWriteItem(ctx, in, append(optFns, func(o *dynamodb.Options) { o.Protocol = sdk })...)
}

// BenchmarkEndToEndPerEvent is BenchmarkHandlerPerEvent through the real
// SDK client (the production client's options): request serialisation,
// SigV4 signing, response decoding, with only the network answered in
// process; send=sdk serialises with the SDK's serialiser instead of the
// writer's, and send=none is the handler alone (BenchmarkHandlerPerEvent's
// null store) in CPU time, which a loaded host disturbs less than wall
// time. cpu-ns/event is the process's user+system CPU, which counts
// the writer's parallel batches that wall time would hide.
func BenchmarkEndToEndPerEvent(b *testing.B) {
	client := dynamodb.New(dynamodb.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String("https://dynamodb.us-east-1.amazonaws.com"),
		Credentials:  credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "secret", ""),
	}, func(o *dynamodb.Options) {
		ddbclient.Tune(o, 4)
		o.HTTPClient = answerHTTP{}
	})
	payloads := events500(1000)
	batch := kinesisBatch(payloads...)
	for _, enc := range []struct {
		name  string
		store Client
	}{{"none", nullStore{}}, {"own", client}, {"sdk", sdkSerialiser{client}}} {
		b.Run("send="+enc.name, func(b *testing.B) {
			h := New(DefaultConfig("bench"), enc.store, Options{Now: func() time.Time { return fixtureNow }})
			ctx := context.Background()
			if resp, _ := h.Kinesis(ctx, batch); len(resp.BatchItemFailures) != 0 {
				b.Fatal("failures")
			}
			before := cpuTime()
			for b.Loop() {
				h.Kinesis(ctx, batch)
			}
			b.ReportMetric(float64(cpuTime()-before)/float64(b.N*len(payloads)), "cpu-ns/event")
		})
	}
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
