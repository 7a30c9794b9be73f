package shardline

import (
	"encoding/json"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/shardline/shardline/internal/archive"
)

// archiveBucket is the bucket the archive writes to: the one with a
// lifecycle rule on the events prefix.
func (s synth) archiveBucket(t *testing.T) (string, map[string]any) {
	t.Helper()
	for id, b := range s.resources("AWS::S3::Bucket") {
		if strings.Contains(id, "ArchiveStoreBucket") {
			return id, props(b)
		}
	}
	t.Fatal("no archive bucket")
	return "", nil
}

// bucketPolicy is the statements of bucket id's policy.
func (s synth) bucketPolicy(t *testing.T, id string) []any {
	t.Helper()
	for _, p := range s.resources("AWS::S3::BucketPolicy") {
		if b, _ := json.Marshal(props(p)["Bucket"]); string(b) == `{"Ref":"`+id+`"}` {
			return props(p)["PolicyDocument"].(map[string]any)["Statement"].([]any)
		}
	}
	t.Fatalf("no policy on %s", id)
	return nil
}

// TestArchiveBucketIsLockedDown: both of the archive's buckets, and the
// FailedBatches one, are encrypted, block every kind of public access,
// refuse requests without TLS (the archive's also TLS below 1.2), are
// retained with the stack;
// the archive's is versioned, logs its access, and has its lifecycle:
// Intelligent-Tiering after 30 days, old versions kept 30 days, and an
// expiry only when ArchiveExpiryDays asks.
func TestArchiveBucketIsLockedDown(t *testing.T) {
	s := defaultSynth(t)
	buckets := s.resources("AWS::S3::Bucket")
	if len(buckets) != 3 {
		t.Fatalf("%d buckets, want the archive, its access logs and the failed batches", len(buckets))
	}
	blocked := map[string]any{"BlockPublicAcls": true, "BlockPublicPolicy": true, "IgnorePublicAcls": true, "RestrictPublicBuckets": true}
	for id, b := range buckets {
		p := props(b)
		enc, _ := json.Marshal(p["BucketEncryption"])
		if !strings.Contains(string(enc), `"SSEAlgorithm":"AES256"`) {
			t.Errorf("%s: encryption %s", id, enc)
		}
		if !reflect.DeepEqual(p["PublicAccessBlockConfiguration"], blocked) {
			t.Errorf("%s: public access block %v", id, p["PublicAccessBlockConfiguration"])
		}
		if b["DeletionPolicy"] != "Retain" {
			t.Errorf("%s: deletion policy %v", id, b["DeletionPolicy"])
		}
		sslOnly := false
		for _, st := range s.bucketPolicy(t, id) {
			st := st.(map[string]any)
			cond, _ := json.Marshal(st["Condition"])
			res, _ := json.Marshal(st["Resource"])
			if st["Effect"] == "Deny" && st["Action"] == "s3:*" && string(cond) == `{"Bool":{"aws:SecureTransport":"false"}}` && strings.Contains(string(res), `"/*"`) {
				sslOnly = true
			}
			if st["Effect"] == "Allow" {
				if pr, _ := json.Marshal(st["Principal"]); string(pr) != `{"Service":"logging.s3.amazonaws.com"}` || !strings.Contains(string(cond), "aws:SourceArn") {
					t.Errorf("%s: allows %s to %s", id, pr, st["Action"])
				}
			}
		}
		if !sslOnly {
			t.Errorf("%s: does not refuse requests without TLS", id)
		}
	}

	id, p := s.archiveBucket(t)
	if v, _ := json.Marshal(p["VersioningConfiguration"]); string(v) != `{"Status":"Enabled"}` {
		t.Errorf("versioning %s", v)
	}
	if logs, _ := json.Marshal(p["LoggingConfiguration"]); !strings.Contains(string(logs), "ArchiveStoreAccessLogs") {
		t.Errorf("server access logging %s", logs)
	}
	tls := false
	for _, st := range s.bucketPolicy(t, id) {
		cond, _ := json.Marshal(st.(map[string]any)["Condition"])
		tls = tls || string(cond) == `{"NumericLessThan":{"s3:TlsVersion":1.2}}`
	}
	if !tls {
		t.Error("the archive bucket takes TLS below 1.2")
	}
	rules := p["LifecycleConfiguration"].(map[string]any)["Rules"].([]any)
	rule := rules[0].(map[string]any)
	want := map[string]any{
		"Id": "archive-events", "Prefix": archive.Prefix, "Status": "Enabled",
		"Transitions":                    []any{map[string]any{"StorageClass": "INTELLIGENT_TIERING", "TransitionInDays": float64(ArchiveTierDays)}},
		"NoncurrentVersionExpiration":    map[string]any{"NoncurrentDays": float64(ArchiveNoncurrentDays)},
		"AbortIncompleteMultipartUpload": map[string]any{"DaysAfterInitiation": float64(1)},
	}
	if len(rules) != 1 || !reflect.DeepEqual(rule, want) {
		t.Errorf("lifecycle %v, want %v (no expiry by default)", rules, want)
	}

	_, p = synthesize(t, &Props{ArchiveExpiryDays: 400}, nil).archiveBucket(t)
	rule = p["LifecycleConfiguration"].(map[string]any)["Rules"].([]any)[0].(map[string]any)
	if rule["ExpirationInDays"] != float64(400) {
		t.Errorf("ArchiveExpiryDays 400: lifecycle %v", rule)
	}
}

// TestArchiveIAMIsLeastPrivilege: the archive function may read the
// table's stream and put objects under the events prefix, nothing more: no
// read, list or delete in the bucket, no item in the table. The readers'
// policy may only get and list the events and read the Glue table.
func TestArchiveIAMIsLeastPrivilege(t *testing.T) {
	s := defaultSynth(t)
	got := map[string][]string{}
	for id, pol := range s.resources("AWS::IAM::Policy") {
		if !strings.HasPrefix(id, "PArchive") {
			continue
		}
		for _, st := range props(pol)["PolicyDocument"].(map[string]any)["Statement"].([]any) {
			st := st.(map[string]any)
			res, _ := json.Marshal(st["Resource"])
			for _, a := range actions(st["Action"]) {
				got[a] = append(got[a], string(res))
			}
		}
	}
	want := map[string]string{
		"s3:PutObject": "/events/*", "s3:ListBucket": "FailedBatches", "dynamodb:DescribeStream": "StreamArn", "dynamodb:GetRecords": "StreamArn",
		"dynamodb:GetShardIterator": "StreamArn", "dynamodb:ListStreams": `"*"`,
		"xray:PutTraceSegments": `"*"`, "xray:PutTelemetryRecords": `"*"`, "logs:CreateLogStream": "ArchiveLogs", "logs:PutLogEvents": "ArchiveLogs",
	}
	var names []string
	for a := range got {
		names = append(names, a)
	}
	if len(got) != len(want) {
		t.Errorf("the archive role may %v, want exactly %v", names, keysOf(want))
	}
	for a, res := range want {
		if !strings.Contains(strings.Join(got[a], " "), res) {
			t.Errorf("archive role: %s on %s, want %s", a, got[a], res)
		}
	}
	// PutObject twice: the archive's events, and the batches it gives up on.
	put := strings.Join(got["s3:PutObject"], " ")
	if len(got["s3:PutObject"]) != 2 || !strings.Contains(put, "ArchiveStoreBucket") || !strings.Contains(put, `"/aws/lambda/*"`) || !strings.Contains(put, "FailedBatches") {
		t.Errorf("PutObject on %s, not the archive bucket's events/ and the FailedBatches bucket's aws/lambda/ only", put)
	}

	readers := s.one(t, "AWS::IAM::ManagedPolicy")
	allowed := map[string]bool{"s3:GetObject": true, "s3:ListBucket": true, "s3:GetBucketLocation": true,
		"glue:GetDatabase": true, "glue:GetTable": true, "glue:GetPartition": true, "glue:GetPartitions": true}
	for _, st := range props(readers)["PolicyDocument"].(map[string]any)["Statement"].([]any) {
		st := st.(map[string]any)
		res, _ := json.Marshal(st["Resource"])
		for _, a := range actions(st["Action"]) {
			if !allowed[a] {
				t.Errorf("archive readers may %s", a)
			}
			if a == "s3:GetObject" && !strings.Contains(string(res), `"/events/*"`) {
				t.Errorf("readers get objects %s, not only events", res)
			}
			if a == "s3:ListBucket" {
				if cond, _ := json.Marshal(st["Condition"]); string(cond) != `{"StringLike":{"s3:prefix":["events/*"]}}` {
					t.Errorf("readers list %s", cond)
				}
			}
			if string(res) == `"*"` {
				t.Errorf("readers may %s on every resource", a)
			}
			if a == "glue:GetTable" && (!strings.Contains(string(res), `table/s_archive/`+ArchiveTable+`"`) || !strings.Contains(string(res), `table/s_archive/`+ArchiveV1Table+`"`)) {
				t.Errorf("readers read the Glue tables %s, not both %s and %s", res, ArchiveTable, ArchiveV1Table)
			}
		}
	}
	if !strings.HasPrefix(archive.LayoutPrefix, archive.Prefix) || !strings.HasPrefix(archive.V1Template, archive.Prefix) {
		t.Errorf("the layouts %s and %s are not both under %s, which the grants and the lifecycle rule cover", archive.LayoutPrefix, archive.V1Template, archive.Prefix)
	}
}

// glueTables is the Glue tables' inputs by name, each with its database
// under "database".
func (s synth) glueTables(t *testing.T) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	for _, r := range s.resources("AWS::Glue::Table") {
		in := props(r)["TableInput"].(map[string]any)
		in["database"] = props(r)["DatabaseName"]
		out[in["Name"].(string)] = in
	}
	return out
}

// templateTail is the literal end of a location template joined onto the
// bucket's name: its path in the bucket, with a leading "/".
func templateTail(t *testing.T, tmpl any) string {
	t.Helper()
	b, _ := json.Marshal(tmpl)
	var join struct {
		Join []json.RawMessage `json:"Fn::Join"`
	}
	if err := json.Unmarshal(b, &join); err != nil || len(join.Join) != 2 {
		t.Fatalf("template %s is not a join onto the bucket's name", b)
	}
	var parts []any
	json.Unmarshal(join.Join[1], &parts)
	tail, _ := parts[len(parts)-1].(string)
	if !strings.Contains(string(b), "ArchiveStoreBucket") || !strings.HasPrefix(tail, "/") {
		t.Fatalf("template %s", b)
	}
	return tail
}

func keysOfAny[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func actions(v any) []string {
	switch a := v.(type) {
	case string:
		return []string{a}
	case []any:
		var out []string
		for _, x := range a {
			out = append(out, x.(string))
		}
		return out
	}
	return nil
}

func keysOf(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestArchiveMappingTableAndAlarms: the table's stream reaches the archive
// function with inserted and rewritten events only, given up on to the
// FailedBatches bucket after bounded retries; the Glue tables' columns are
// archive.Line's, read as JSON: events projected on bucket and day where
// the function writes, events_v1 on src and day where the layout v1 wrote;
// the archive has its lag and error alarms and its outputs.
func TestArchiveMappingTableAndAlarms(t *testing.T) {
	s := defaultSynth(t)
	m := s.mapping(t, "Archive")
	for k, v := range map[string]any{"BatchSize": float64(ArchiveBatchSize), "MaximumBatchingWindowInSeconds": float64(ArchiveBatchingWindow),
		"StartingPosition": "TRIM_HORIZON", "ParallelizationFactor": float64(1)} {
		if !reflect.DeepEqual(m[k], v) {
			t.Errorf("%s = %v, want %v", k, m[k], v)
		}
	}
	givesUpToTheBucket(t, s, "Archive", m)
	f, _ := json.Marshal(m["FilterCriteria"])
	if !strings.Contains(string(f), `\"eventName\":[\"INSERT\",\"MODIFY\"]`) || !strings.Contains(string(f), `{\"prefix\":\"E#\"}`) {
		t.Errorf("filter %s", f)
	}

	db := props(s.one(t, "AWS::Glue::Database"))["DatabaseInput"].(map[string]any)["Name"]
	if db != "s_archive" {
		t.Errorf("database %v", db)
	}
	tables := s.glueTables(t)
	if len(tables) != 2 || tables[ArchiveTable] == nil || tables[ArchiveV1Table] == nil {
		t.Fatalf("Glue tables %v, want %s and %s", keysOfAny(tables), ArchiveTable, ArchiveV1Table)
	}
	for name, tbl := range tables {
		if tbl["database"] != db {
			t.Errorf("%s: in database %v", name, tbl["database"])
		}
		sd := tbl["StorageDescriptor"].(map[string]any)
		var cols []string
		for _, c := range sd["Columns"].([]any) {
			cols = append(cols, c.(map[string]any)["Name"].(string))
		}
		if want := []string{"source", "id", "time", "type", "subject", "change", "stored_at", "seq", "event"}; !reflect.DeepEqual(cols, want) || !reflect.DeepEqual(cols, ArchiveColumns()) {
			t.Errorf("%s: columns %v, want %v", name, cols, want)
		}
		params := tbl["Parameters"].(map[string]any)
		if params["projection.enabled"] != "true" || params["projection.day.type"] != "date" || params["projection.day.format"] != "yyyy-MM-dd" ||
			params["classification"] != "json" || params["compressionType"] != "gzip" {
			t.Errorf("%s: projection %v", name, params)
		}
		if sd["SerdeInfo"].(map[string]any)["SerializationLibrary"] != "org.openx.data.jsonserde.JsonSerDe" {
			t.Errorf("%s: serde %v", name, sd["SerdeInfo"])
		}
	}

	// events: the layout the function writes, a bucket of two digits and a
	// day; the template spells exactly the prefix of archive.ObjectKey.
	v2 := tables[ArchiveTable]
	params := v2["Parameters"].(map[string]any)
	if parts, _ := json.Marshal(v2["PartitionKeys"]); string(parts) != `[{"Name":"bucket","Type":"int"},{"Name":"day","Type":"string"}]` {
		t.Errorf("%s: partitions %s", ArchiveTable, parts)
	}
	if params["projection.bucket.type"] != "integer" || params["projection.bucket.range"] != "0,31" || params["projection.bucket.digits"] != "2" {
		t.Errorf("%s: bucket projection %v", ArchiveTable, params)
	}
	day := time.Date(2026, 10, 17, 9, 0, 0, 0, time.UTC)
	for _, src := range []string{"orders", "auth #1 (eu/west)", "device/00001"} {
		tmpl := templateTail(t, params["storage.location.template"])
		got := strings.NewReplacer("${bucket}", archive.BucketPartition(archive.Bucket(src)), "${day}", "2026-10-17").Replace(tmpl)
		if key := archive.ObjectKey(src, day, "batch"); "/"+key != got+"batch.json.gz" {
			t.Errorf("%s: Athena reads %s's day at %s, the archive writes %s", ArchiveTable, src, got, key)
		}
	}
	if loc, _ := json.Marshal(v2["StorageDescriptor"].(map[string]any)["Location"]); !strings.Contains(string(loc), `"/events/v2/"`) {
		t.Errorf("%s: location %s", ArchiveTable, loc)
	}

	// events_v1: the objects the layout before wrote, by src and day.
	v1 := tables[ArchiveV1Table]
	params = v1["Parameters"].(map[string]any)
	if parts, _ := json.Marshal(v1["PartitionKeys"]); string(parts) != `[{"Name":"src","Type":"string"},{"Name":"day","Type":"string"}]` {
		t.Errorf("%s: partitions %s", ArchiveV1Table, parts)
	}
	if params["projection.src.type"] != "injected" || templateTail(t, params["storage.location.template"]) != "/events/src=${src}/day=${day}/" {
		t.Errorf("%s: projection %v", ArchiveV1Table, params)
	}

	found := map[string]bool{}
	for id, a := range s.resources("AWS::CloudWatch::Alarm") {
		for _, name := range []string{"ArchiveIteratorAgeAlarm", "ArchiveErrorsAlarm", "ArchiveGivenUpAlarm"} {
			if strings.HasPrefix(id, "P"+name) {
				found[name] = true
				if name == "ArchiveIteratorAgeAlarm" && props(a)["Threshold"] != float64(ArchiveIteratorAgeSeconds*1000) {
					t.Errorf("%s threshold %v", name, props(a)["Threshold"])
				}
			}
		}
	}
	if len(found) != 3 {
		t.Errorf("archive alarms %v", found)
	}
	outs := s.tpl["Outputs"].(map[string]any)
	for _, o := range []string{"ArchiveBucket", "ArchiveDatabase", "ArchiveReaderPolicyArn", "ArchiveMappingId"} {
		if outs[o] == nil {
			t.Errorf("no output %s", o)
		}
	}
	if d, _ := outs["ArchiveBucket"].(map[string]any)["Description"].(string); !strings.Contains(d, "events/v2/bucket=<NN>/day=<YYYY-MM-DD>/") {
		t.Errorf("ArchiveBucket's description %q does not give the layout", d)
	}
}

// TestArchiveOff: Archive false (as a prop or from context) deploys none of
// it: no bucket but the FailedBatches one, no function, mapping, Glue
// table, policy, alarm or output, and what is left is still cdk-nag clean.
func TestArchiveOff(t *testing.T) {
	for _, s := range []synth{synthesize(t, &Props{Archive: Bool(false)}, nil), synthesize(t, nil, map[string]any{CtxArchive: "false"})} {
		for _, typ := range []string{"AWS::Glue::Database", "AWS::Glue::Table", "AWS::IAM::ManagedPolicy"} {
			if n := len(s.resources(typ)); n != 0 {
				t.Errorf("Archive off: %d %s", n, typ)
			}
		}
		for typ, want := range map[string]int{"AWS::Lambda::Function": 4, "AWS::Lambda::EventSourceMapping": 2, "AWS::CloudWatch::Alarm": 16,
			"AWS::S3::Bucket": 1, "AWS::S3::BucketPolicy": 1} {
			if n := len(s.resources(typ)); n != want {
				t.Errorf("Archive off: %d %s, want %d", n, typ, want)
			}
		}
		b, _ := json.Marshal(s.tpl)
		if strings.Contains(string(b), "Archive") {
			t.Error("Archive off: the template still names the archive")
		}
		noNagFindings(t, s)
	}
}
