package devserver

import (
	"context"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"

	"github.com/shardline/shardline/local/kinesislocal"
	"github.com/shardline/shardline/local/openapi"
	"github.com/shardline/shardline/local/syncbuf"
	"github.com/shardline/shardline/testkit/openapitest"
)

// TestRun is `make run` end to end: DynamoDB Local starts, the samples are
// replayed and printed, the API takes a new event, and Ctrl-C stops it all.
func TestRun(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out syncbuf.Buffer
	kinesisReady := make(chan Kinesis, 1)
	base, stop, err := Serve(ctx, Options{
		Addr:      "127.0.0.1:0",
		Table:     "shardline-events",
		Samples:   "../../events",
		Getenv:    os.Getenv,
		Out:       &out,
		OnKinesis: func(k Kinesis) { kinesisReady <- k },
	})
	if err != nil {
		t.Fatalf("Run ended early: %v\n%s", err, out.String())
	}
	kin := <-kinesisReady
	for _, want := range []string{"stored 13 events", "quarantined 3 records", "auth #1 (eu/west)", "202 {\"accepted\":4",
		"-> 2 events, plan gsi", `"id":"ord-7f3aa0"`, "next page: add &cursor=",
		"sources in the last two days", "13 of 13 stored events counted", "archived 13 of 13 stored events",
		"writing events/v2/bucket=<NN>/day=<day>/... to ",
		"Kinesis (kinesalite) at " + kin.Endpoint + ": stream shardline-events (arn:aws:kinesis:us-east-1:000000000000:stream/shardline-events)",
		"aws kinesis put-record --endpoint-url " + kin.Endpoint + " --region us-east-1", "go, records included, to the local S3 bucket " + kin.Bucket,
		"AWS_ENDPOINT_URL_S3=" + kin.S3, "shardline redrive --bucket shardline-failed-batches --ingest-mapping local-ingest --counter-mapping local-counter --archive-mapping local-archive", "--tenants env --dry-run"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	client := openapitest.Client(t, openapitest.Any) // every exchange checked against the OpenAPI document
	resp, err := client.Post(base+"/v1/events", "application/json",
		strings.NewReader(`{"id":"x-1","source":"curl","type":"com.example.hello","data":{"hello":"world"}}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 202 || string(body) != `{"accepted":1,"rejected":[]}` {
		t.Fatalf("POST: %d %s", resp.StatusCode, body)
	}
	resp, err = client.Get(base + "/v1/events?source=curl&consistent=true")
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"id":"x-1"`) {
		t.Fatalf("GET: %d %s", resp.StatusCode, body)
	}
	// A record put on the local stream is stored by the poller.
	kc := kinesislocal.Client(kin.Endpoint)
	if _, err := kc.PutRecord(ctx, &kinesis.PutRecordInput{StreamName: aws.String(kin.Stream), PartitionKey: aws.String("k"),
		Data: []byte(`{"id":"k-1","source":"kinesis-producer","type":"com.example.hello"}`)}); err != nil {
		t.Fatal(err)
	}
	for {
		resp, err = client.Get(base + "/v1/events?source=kinesis-producer&consistent=true")
		if err != nil {
			t.Fatal(err)
		}
		body, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
		if strings.Contains(string(body), `"id":"k-1"`) {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the record put on the stream was not stored: %s\n%s", body, out.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
	resp, err = client.Get(base + "/nowhere")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 404 {
		t.Fatalf("unknown route: %d", resp.StatusCode)
	}
	resp, err = client.Get(base + openapi.Path)
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != string(openapi.Document()) {
		t.Fatalf("GET %s: %d, %d bytes", openapi.Path, resp.StatusCode, len(body))
	}
	if err := stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if !strings.Contains(out.String(), "stopped kinesalite") || !strings.Contains(out.String(), "stopped the local S3") || !strings.Contains(out.String(), "stopped DynamoDB Local") {
		t.Fatalf("DynamoDB Local not stopped:\n%s", out.String())
	}
}
