package onfailure

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestRoundTrip: records as Lambda sends them (after a function error, and
// after batch item failures, whose functionError is null) parse and write
// back to the same JSON.
func TestRoundTrip(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.json")
	if len(files) == 0 {
		t.Fatal("no fixtures")
	}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		r, err := Parse(raw)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		var want bytes.Buffer
		if err := json.Compact(&want, raw); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(out, want.Bytes()) {
			t.Errorf("%s:\n got %s\nwant %s", f, out, want.Bytes())
		}
	}
}

// TestNew writes what the fixture holds.
func TestNew(t *testing.T) {
	at := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	r := New(Batch{
		StreamARN: "arn:aws:kinesis:us-east-1:000000000000:stream/local", ShardID: "shardId-000000000001",
		FirstSequence: "49601189658422359378836298521827638475320189012309704722",
		LastSequence:  "49601189658422359378836298522902373528957594348623495186",
		FirstArrival:  at("2026-11-22T10:38:04.835Z"), LastArrival: at("2026-11-22T10:38:05.5801Z"),
		Size: 500, Condition: RetryAttemptsExhausted, Invocations: 11, FunctionError: true,
		FunctionARN: "arn:aws:lambda:us-east-1:000000000000:function:shardline-ingest",
		RequestID:   "c9b8fa9f-5a7f-4e4c-af9c-0c604cde93a5", At: at("2026-11-22T11:38:06.021+01:00"),
	})
	got, _ := json.Marshal(r)
	raw, _ := os.ReadFile("testdata/kinesis-retry-exhausted.json")
	var want bytes.Buffer
	json.Compact(&want, raw)
	if !bytes.Equal(got, want.Bytes()) {
		t.Fatalf("\n got %s\nwant %s", got, want.Bytes())
	}
}

// TestParseRefuses what does not locate a Kinesis batch.
func TestParseRefuses(t *testing.T) {
	for _, body := range []string{
		`not json`,
		`{"requestContext":{},"DDBStreamBatchInfo":{"shardId":"s"}}`,
		`{"KinesisBatchInfo":{"shardId":"s","startSequenceNumber":"1","endSequenceNumber":"2"}}`,
		`{"KinesisBatchInfo":{"streamArn":"a","startSequenceNumber":"1","endSequenceNumber":"2"}}`,
		`{"KinesisBatchInfo":{"streamArn":"a","shardId":"s","startSequenceNumber":"x1","endSequenceNumber":"2"}}`,
		`{"KinesisBatchInfo":{"streamArn":"a","shardId":"s","startSequenceNumber":"1","endSequenceNumber":"02"}}`,
		`{"KinesisBatchInfo":{"streamArn":"a","shardId":"s","startSequenceNumber":"10","endSequenceNumber":"9"}}`,
	} {
		if _, err := Parse([]byte(body)); err == nil {
			t.Errorf("%s: parsed", body)
		}
	}
}

func TestCompareSequence(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want int
	}{{"9", "10", -1}, {"10", "9", 1}, {"123", "123", 0}, {"124", "123", 1}, {"49601189658422359378836298521827638475320189012309704722", "49601189658422359378836298522902373528957594348623495186", -1}} {
		if got := CompareSequence(c.a, c.b); got != c.want {
			t.Errorf("CompareSequence(%s, %s) = %d", c.a, c.b, got)
		}
	}
}
