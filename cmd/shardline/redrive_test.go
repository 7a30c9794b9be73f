package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/shardline/shardline/internal/counts"
	"github.com/shardline/shardline/internal/ingest"
	"github.com/shardline/shardline/internal/item"
	"github.com/shardline/shardline/local/ddbstreams"
	"github.com/shardline/shardline/local/kinesisread"
	"github.com/shardline/shardline/ops/onfailure"
	"github.com/shardline/shardline/testkit/testddb"
	"github.com/shardline/shardline/testkit/testkinesis"
	"github.com/shardline/shardline/testkit/tests3"
)

// TestRedriveCommand: shardline redrive configured as an operator would
// be, the SDK's default chain pointed at the local engines by
// AWS_ENDPOINT_URL_*, on a bucket that holds one given-up batch of each
// consumer as Lambda writes them: --dry-run reports and changes nothing; a
// redrive stores the ingest batch's events, counts the counter's and
// archives the archive's, and deletes the objects; a second finds nothing;
// an object of a mapping it was not told of is reported, left, and exits 1.
func TestRedriveCommand(t *testing.T) {
	ctx := context.Background()
	table, bucket, archiveDir := testddb.StreamTable(t), tests3.Bucket(t), t.TempDir()
	ddb := testddb.Client(t, testddb.Endpoint(t))

	// The ingest function's batch: records read back from a stream.
	arn := testkinesis.Stream(t, 1)
	kc := testkinesis.Client(t, testkinesis.Endpoint(t))
	records, want := testkinesis.Corpus(12, "cli")
	testkinesis.Put(t, kc, arn, records)
	stream, _ := kinesisread.ParseARN(arn)
	shards, err := kinesisread.Shards(ctx, kc, stream)
	if err != nil {
		t.Fatal(err)
	}
	it, err := kinesisread.Iterator(ctx, kc, stream, *shards[0].ShardId, kinesisread.TrimHorizon)
	if err != nil {
		t.Fatal(err)
	}
	page, err := kinesisread.Read(ctx, kc, stream, *shards[0].ShardId, it, 100)
	if err != nil || len(page.Records) != len(records) {
		t.Fatalf("%v, %d records", err, len(page.Records))
	}
	fn := func(name string) string { return "arn:aws:lambda:us-east-1:123456789012:function:" + name }
	must := func(r onfailure.Record, err error) onfailure.Record {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	put := func(name string, r onfailure.Record) {
		t.Helper()
		body, _ := json.Marshal(r)
		key := onfailure.Key(name+"-mapping", r.Batch().ShardID, time.Now())
		if _, err := tests3.Client(t).PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(body)}); err != nil {
			t.Fatal(err)
		}
	}
	giveUp := func(name, streamARN, shard string) onfailure.GiveUp {
		return onfailure.GiveUp{StreamARN: streamARN, ShardID: shard, Condition: onfailure.RetryAttemptsExhausted, Invocations: 11,
			FunctionError: true, FunctionARN: fn(name), At: time.Now()}
	}
	put("ingest", must(onfailure.NewKinesis(giveUp("Shardline-Ingest-A1", arn, *shards[0].ShardId), page.Records)))

	// The counter's and the archive's batches: the table stream's records
	// of events stored, as their mappings pass them.
	hour := time.Now().UTC().Truncate(time.Hour).Add(-time.Hour)
	tableStream, err := ddbstreams.StreamARN(ctx, ddb, table)
	if err != nil {
		t.Fatal(err)
	}
	// One event given up under the previous release (before the chain
	// began: sourcecounter.Counter.Redrive counts it), then one counted by the
	// counter function, so that its stream shard's chain has a link and
	// the batch given up after it is redriven by the chain
	// (counts.Chain.Redrive).
	one := func(id string, at time.Time) map[string][]events.DynamoDBEventRecord {
		t.Helper()
		k := events.KinesisEvent{Records: []events.KinesisEventRecord{{Kinesis: events.KinesisRecord{
			Data: []byte(fmt.Sprintf(`{"id":%q,"source":"table","type":"t","time":%q}`, id, at.Format(time.RFC3339))), SequenceNumber: "0"}}}}
		if resp, err := ingest.New(ingest.DefaultConfig(table), ddb, ingest.Options{}).Kinesis(ctx, k); err != nil || len(resp.BatchItemFailures) > 0 {
			t.Fatalf("ingest: %v %v", err, resp)
		}
		recs, err := ddbstreams.Read(ctx, ddbstreams.Static(testddb.Endpoint(t)), tableStream)
		if err != nil {
			t.Fatal(err)
		}
		return recs
	}
	old := one("t-old", hour.Add(10*time.Minute))
	before := one("t-first", hour.Add(30*time.Minute))
	counter := counts.New(counts.Config{Table: table, Retention: 30 * 24 * time.Hour}, ddb, counts.Options{})
	for shard, recs := range before {
		var ev events.DynamoDBTimeWindowEvent
		ev.ShardID, ev.Records = shard, recs[len(old[shard]):]
		if _, err := counter.Invoke(ctx, ev); err != nil {
			t.Fatal(err)
		}
		var gaveUp []events.DynamoDBEventRecord // as the mapping passes them: inserted events
		for _, r := range old[shard] {
			if item.IsEventChange(r, "INSERT") {
				gaveUp = append(gaveUp, r)
			}
		}
		put("counter", must(onfailure.NewDynamoDB(giveUp("Shardline-Counter-B1", tableStream, shard), gaveUp)))
	}
	var k events.KinesisEvent
	for i := range 5 {
		data := fmt.Sprintf(`{"id":"t%d","source":"table","type":"t","time":%q}`, i, hour.Add(time.Duration(i)*time.Minute).Format(time.RFC3339))
		k.Records = append(k.Records, events.KinesisEventRecord{Kinesis: events.KinesisRecord{Data: []byte(data), SequenceNumber: fmt.Sprint(i)}})
	}
	if resp, err := ingest.New(ingest.DefaultConfig(table), ddb, ingest.Options{}).Kinesis(ctx, k); err != nil || len(resp.BatchItemFailures) > 0 {
		t.Fatalf("ingest: %v %v", err, resp)
	}
	byShard, err := ddbstreams.Read(ctx, ddbstreams.Static(testddb.Endpoint(t)), tableStream)
	if err != nil {
		t.Fatal(err)
	}
	for shard, recs := range byShard {
		byShard[shard] = recs[len(before[shard]):] // the first event's were counted
	}
	for shard, recs := range byShard {
		var inserts []events.DynamoDBEventRecord
		for _, r := range recs {
			if item.IsEventChange(r, "INSERT") {
				inserts = append(inserts, r)
			}
		}
		if len(inserts) > 0 {
			put("counter", must(onfailure.NewDynamoDB(giveUp("Shardline-Counter-B2", tableStream, shard), inserts)))
			put("archive", must(onfailure.NewDynamoDB(giveUp("Shardline-Archive-C3", tableStream, shard), inserts)))
		}
	}

	// The command reaches DynamoDB Local and the local S3 through
	// recorders, which note the IAM action and resource of every request
	// (iam_test.go).
	ddbRec := newRecorder(t, testddb.Endpoint(t), dynamoCalls)
	archiveBucket := tests3.Bucket(t)
	s3Rec := newRecorder(t, tests3.Endpoint(t), s3Calls(map[string]string{bucket: "FailedBatches", archiveBucket: "ArchiveBucket"}))
	lambdaAPI := newFakeLambda(t) // the ingest function's tenants, read by --tenants function (the default)
	lambdaAPI.set("Shardline-Ingest-A1", map[string]string{"EVENTS_TABLE": table})
	calls := func() []awsCall { return append(append(ddbRec.take(), s3Rec.take()...), lambdaAPI.take()...) }
	for k, v := range map[string]string{
		"EVENTS_TABLE": table, "AWS_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": "local", "AWS_SECRET_ACCESS_KEY": "local",
		"AWS_ENDPOINT_URL_DYNAMODB": ddbRec.URL, "AWS_ENDPOINT_URL_S3": s3Rec.URL, "AWS_ENDPOINT_URL_LAMBDA": lambdaAPI.URL, "AWS_EC2_METADATA_DISABLED": "true",
		"AWS_CONFIG_FILE": os.DevNull, "AWS_SHARED_CREDENTIALS_FILE": os.DevNull,
	} {
		t.Setenv(k, v)
	}
	sh := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := run(append([]string{"redrive"}, args...), &out, &errb)
		return code, out.String(), errb.String()
	}
	counted := func() int64 {
		q := url.Values{"source": {"table"}, "from": {hour.Format(time.RFC3339)}, "to": {hour.Add(time.Hour).Format(time.RFC3339)}, "interval": {"1h"}}
		req, _ := counts.ParseRequest(q.Encode(), time.Now())
		if _, err := (&counts.LSM{Client: ddb, Table: table}).Fold(ctx); err != nil { // as the scheduled fold does
			t.Fatal(err)
		}
		resp, err := counts.ReadLevels(ctx, ddb, table, 0, req)
		if err != nil {
			t.Fatal(err)
		}
		var n int64
		for _, p := range resp.Series[0].Points {
			n += p.Count
		}
		return n
	}
	archived := func() int {
		n := 0
		filepath.WalkDir(archiveDir, func(path string, d os.DirEntry, err error) error {
			if err == nil && strings.HasSuffix(path, ".json.gz") {
				n++
			}
			return err
		})
		return n
	}
	const (
		read   = "redrive --dry-run"
		writes = "redrive, besides what --dry-run needs (what the ingest, counter and archive functions may do)"
	)
	iam := newPermissionCheck(t, help(t, "redrive"), read, writes)
	all := []string{"--bucket", bucket, "--ingest-mapping", "ingest-mapping", "--counter-mapping", "counter-mapping", "--archive-mapping", "archive-mapping",
		"--archive-dir", archiveDir}
	steps := []struct {
		args          []string
		code          int
		out, errs     []string
		stored        int
		counted       int64
		archived, obj int
		iam           []string // the sections of -h's permissions that apply; nil: no AWS request
	}{
		{[]string{"-h"}, 0, nil, []string{"usage: shardline redrive --bucket NAME", "FailedBatches", "AWS_ENDPOINT_URL_S3",
			"s3:DeleteObject", "dynamodb:BatchWriteItem  E# (events), Q# (quarantined records)", "-dry-run", "-counter-mapping", "docs/failed-batches.md"}, 7, 1, 0, 4, nil},
		{nil, 1, nil, []string{"--bucket is required"}, 7, 1, 0, 4, nil},
		{[]string{"--bucket", bucket, "--prefix", "x/"}, 1, nil, []string{"--prefix \"x/\": Lambda writes under aws/lambda/"}, 7, 1, 0, 4, nil},
		{[]string{"--bucket", bucket}, 1, nil, []string{"name at least one mapping to redrive"}, 7, 1, 0, 4, nil},
		{[]string{"--bucket", bucket, "--counter-mapping", "x", "--archive-mapping", "x"}, 1, nil, []string{"--counter-mapping and --archive-mapping are the same mapping x"}, 7, 1, 0, 4, nil},
		{append(all, "--dry-run"), 0,
			[]string{"dry run (nothing processed or deleted) of s3://" + bucket + "/aws/lambda/ into table " + table, "objects           4", fmt.Sprintf("would redrive     4 (%d records)", len(page.Records)+11)},
			[]string{"dry run: nothing is processed or deleted", "would redrive     Shardline-Ingest-A1 " + *shards[0].ShardId,
				fmt.Sprintf("%d records; a redrive would run them through the ingest code", len(page.Records)), "through the counter code", "through the archive code"}, 7, 1, 0, 4, []string{read}},
		{all, 0, []string{fmt.Sprintf("redriven          4 (%d records processed; objects deleted)", len(page.Records)+11), "failed            0"},
			[]string{"redriven          Shardline-Counter-B2 "}, len(want) + 7, 7, 1, 0, []string{read, writes}},
		{all, 0, []string{"objects           0"}, nil, len(want) + 7, 7, 1, 0, []string{read}},
	}
	for _, s := range steps {
		code, out, errs := sh(s.args...)
		iam.check(fmt.Sprint("shardline redrive ", s.args), calls(), s.iam...)
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
		if n := len(testddb.StoredIn(t, ddb, table).Events); n != s.stored {
			t.Fatalf("shardline redrive %v: %d events stored, want %d", s.args, n, s.stored)
		}
		if n := counted(); n != s.counted {
			t.Fatalf("shardline redrive %v: %d counted, want %d", s.args, n, s.counted)
		}
		if n := archived(); n != s.archived {
			t.Fatalf("shardline redrive %v: %d archive objects, want %d", s.args, n, s.archived)
		}
		if n := len(tests3.Keys(t, bucket)); n != s.obj {
			t.Fatalf("shardline redrive %v: %d objects left, want %d", s.args, n, s.obj)
		}
	}

	// With --archive-bucket, the archive's batch goes to that bucket.
	for shard, recs := range byShard {
		put("archive", must(onfailure.NewDynamoDB(giveUp("Shardline-Archive-C3", tableStream, shard), recs)))
	}
	if code, out, errs := sh("--bucket", bucket, "--archive-mapping", "archive-mapping", "--archive-bucket", archiveBucket); code != 0 ||
		len(tests3.Keys(t, archiveBucket)) == 0 {
		t.Fatalf("--archive-bucket: code %d, out %q, err %q, %d archive objects", code, out, errs, len(tests3.Keys(t, archiveBucket)))
	}
	iam.check("shardline redrive --archive-bucket", calls(), read, writes)
	iam.allUsed(nil)

	// A batch of a mapping it was not told of: said, left, exit 1.
	for shard, recs := range byShard {
		put("other", must(onfailure.NewDynamoDB(giveUp("someone-else", tableStream, shard), recs[:1])))
	}
	code, out, errs := sh(all...)
	if code != 1 || !strings.Contains(out, "unknown mapping   1") || !strings.Contains(errs, "event source mapping other-mapping (function someone-else) is not one this run was given") ||
		!strings.Contains(errs, "1 object needs attention") {
		t.Fatalf("unknown function: code %d, out %q, err %q", code, out, errs)
	}
}
