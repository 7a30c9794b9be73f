package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/shardline/shardline/internal/kinesisread"
	"github.com/shardline/shardline/internal/onfailure"
	"github.com/shardline/shardline/internal/testdb"
	"github.com/shardline/shardline/internal/testkinesis"
	"github.com/shardline/shardline/internal/testsqs"
)

// TestRedriveCommand: shardline redrive configured as an operator would
// be, the SDK's default chain pointed at the local engines by
// AWS_ENDPOINT_URL_*: --dry-run reports and changes nothing, a redrive
// stores the batch and deletes its message, a second finds nothing, and a
// batch the stream no longer holds is reported, left, and exits 1.
func TestRedriveCommand(t *testing.T) {
	table, arn, queue := testdb.Table(t), testkinesis.Stream(t, 1), testsqs.Queue(t)
	kc := testkinesis.Client(t, testkinesis.Endpoint(t))
	records, want := testkinesis.Corpus(12, "cli")
	testkinesis.Put(t, kc, arn, records)
	stream, _ := kinesisread.ParseARN(arn)
	shards, err := kinesisread.Shards(context.Background(), kc, stream)
	if err != nil {
		t.Fatal(err)
	}
	it, err := kinesisread.Iterator(context.Background(), kc, stream, *shards[0].ShardId, kinesisread.TrimHorizon)
	if err != nil {
		t.Fatal(err)
	}
	page, err := kinesisread.Read(context.Background(), kc, stream, *shards[0].ShardId, it, 100)
	if err != nil || len(page.Records) != len(records) {
		t.Fatalf("%v, %d records", err, len(page.Records))
	}
	first, last := page.Records[0], page.Records[len(page.Records)-1]
	batch := onfailure.Batch{StreamARN: arn, ShardID: *shards[0].ShardId, FirstSequence: first.Kinesis.SequenceNumber,
		LastSequence: last.Kinesis.SequenceNumber, FirstArrival: first.Kinesis.ApproximateArrivalTimestamp.Time,
		LastArrival: last.Kinesis.ApproximateArrivalTimestamp.Time, Size: len(records), Condition: onfailure.RetryAttemptsExhausted,
		Invocations: 11, At: time.Now()}
	send := func(b onfailure.Batch) {
		body, _ := json.Marshal(onfailure.New(b))
		if _, err := testsqs.Client(t).SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(queue), MessageBody: aws.String(string(body))}); err != nil {
			t.Fatal(err)
		}
	}
	send(batch)
	for k, v := range map[string]string{
		"EVENTS_TABLE": table, "AWS_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": "local", "AWS_SECRET_ACCESS_KEY": "local",
		"AWS_ENDPOINT_URL_DYNAMODB": testdb.Endpoint(t), "AWS_ENDPOINT_URL_KINESIS": testkinesis.Endpoint(t),
		"AWS_ENDPOINT_URL_SQS": testsqs.Endpoint(t), "AWS_EC2_METADATA_DISABLED": "true",
		"AWS_CONFIG_FILE": os.DevNull, "AWS_SHARED_CREDENTIALS_FILE": os.DevNull,
	} {
		t.Setenv(k, v)
	}
	sh := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := run(append([]string{"redrive"}, args...), &out, &errb)
		return code, out.String(), errb.String()
	}
	ddb := testdb.Client(t, testdb.Endpoint(t))
	steps := []struct {
		args      []string
		code      int
		out, errs []string
		stored    int
	}{
		{[]string{"-h"}, 0, nil, []string{"usage: shardline redrive --queue URL", "AT_SEQUENCE_NUMBER", "AWS_ENDPOINT_URL_KINESIS",
			"sqs:DeleteMessage", "kinesis:GetRecords", "dynamodb:BatchWriteItem on\nE# and Q#", "-dry-run", "-stream-arn"}, 0},
		{nil, 1, nil, []string{"--queue is required"}, 0},
		{[]string{"--queue", queue, "--stream-arn", "nope"}, 1, nil, []string{"--stream-arn: \"nope\" is not a Kinesis stream ARN"}, 0},
		{[]string{"--queue", queue, "--dry-run", "--wait", "1s"}, 0,
			[]string{"dry run (nothing written or deleted) of queue " + queue + ", every stream, into table " + table, "messages          1", "would redrive     1 (11 records read back)"},
			[]string{"dry run: nothing is written or deleted", "would redrive  " + batch.ShardID + " " + batch.FirstSequence + ".." + batch.LastSequence + " (11 records, RetryAttemptsExhausted): 11 records read back"}, 0},
		{[]string{"--queue", queue, "--wait", "1s"}, 0, []string{"redriven          1 (11 records stored; messages deleted)", "records gone      0"},
			[]string{"redriven       " + batch.ShardID}, len(want)},
		{[]string{"--queue", queue, "--wait", "1s", "--stream-arn", arn}, 0, []string{"of queue " + queue + ", stream " + arn, "messages          0"}, nil, len(want)},
	}
	for _, s := range steps {
		code, out, errs := sh(s.args...)
		if code != s.code {
			t.Fatalf("shardline redrive %v: code %d, out %q, err %q", s.args, code, out, errs)
		}
		for _, w := range s.out {
			if !strings.Contains(out, w) {
				t.Fatalf("shardline redrive %v: out %q lacks %q (err %q)", s.args, out, w, errs)
			}
		}
		for _, w := range s.errs {
			if !strings.Contains(errs, w) {
				t.Fatalf("shardline redrive %v: err %q lacks %q", s.args, errs, w)
			}
		}
		if n := len(testdb.StoredIn(t, ddb, table).Events); n != s.stored {
			t.Fatalf("shardline redrive %v: %d events stored, want %d", s.args, n, s.stored)
		}
	}
	testkinesis.AssertStoredOnce(t, kc, arn, ddb, table, records, want)

	// A batch older than the stream's retention: said, left, exit 1.
	old := batch
	old.FirstArrival = old.FirstArrival.Add(-48 * time.Hour)
	send(old)
	code, out, errs := sh("--queue", queue, "--wait", "1s")
	if code != 1 || !strings.Contains(out, "records gone      1") || !strings.Contains(errs, "have left the stream: the first arrived") ||
		!strings.Contains(errs, "the message stays on the queue") || !strings.Contains(errs, "1 message needs attention") {
		t.Fatalf("gone batch: code %d, out %q, err %q", code, out, errs)
	}
}
