package shardline

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"

	"github.com/shardline/shardline/internal/ingest"
	"github.com/shardline/shardline/internal/query"
)

// alarmsByID maps each alarm's construct id (AlarmId in the logical id) to
// its properties.
func alarmsByID(s synth) map[string]map[string]any {
	out := map[string]map[string]any{}
	for id, a := range s.resources("AWS::CloudWatch::Alarm") {
		for _, name := range []string{"IteratorAgeAlarm", "IngestErrorsAlarm", "QueryErrorsAlarm", "IngestThrottlesAlarm",
			"QueryThrottlesAlarm", "TableWriteThrottlesAlarm", "GSIWriteThrottlesAlarm", "IngestGivenUpAlarm", "FailedBatchesLostAlarm", "Api5xxAlarm"} {
			if strings.HasPrefix(id, "P"+name) {
				out[name] = props(a)
			}
		}
	}
	return out
}

// TestZeroIsASetting: no retries, no batching window and alarms on the
// first occurrence are settings of their own, and reach the template as 0.
func TestZeroIsASetting(t *testing.T) {
	s := synthesize(t, &Props{
		RetryAttempts: Int(0), BatchingWindow: Duration(0),
		IteratorAgeSeconds: Int(0), FunctionErrors: Int(0), Throttles: Int(0), API5xx: Int(0),
	}, nil)
	esm := s.mapping(t, "Stream")
	if esm["MaximumRetryAttempts"] != float64(0) || esm["MaximumBatchingWindowInSeconds"] != float64(0) {
		t.Errorf("RetryAttempts 0 and BatchingWindow 0 became %v and %v", esm["MaximumRetryAttempts"], esm["MaximumBatchingWindowInSeconds"])
	}
	alarms := alarmsByID(s)
	if len(alarms) != 10 {
		t.Fatalf("%d alarms found by id", len(alarms))
	}
	for id, a := range alarms {
		if a["Threshold"] != float64(0) || a["ComparisonOperator"] != "GreaterThanThreshold" {
			t.Errorf("%s: %v %v, want GreaterThanThreshold 0", id, a["ComparisonOperator"], a["Threshold"])
		}
	}
}

// TestDefaultAlarmThresholds: the defaults alarm on any function error,
// throttle or batch given up on or lost, on five 5xx answers in 5 minutes,
// and on an iterator age over 5 minutes.
func TestDefaultAlarmThresholds(t *testing.T) {
	want := map[string]float64{
		"IteratorAgeAlarm": 300_000, "IngestErrorsAlarm": 0, "QueryErrorsAlarm": 0, "IngestThrottlesAlarm": 0,
		"QueryThrottlesAlarm": 0, "TableWriteThrottlesAlarm": 0, "GSIWriteThrottlesAlarm": 0, "IngestGivenUpAlarm": 0, "FailedBatchesLostAlarm": 0,
		"Api5xxAlarm": 4,
	}
	alarms := alarmsByID(defaultSynth(t))
	for id, th := range want {
		a := alarms[id]
		if a == nil || a["Threshold"] != th || a["ComparisonOperator"] != "GreaterThanThreshold" {
			t.Errorf("%s: %v", id, a)
		}
	}
	s := synthesize(t, nil, map[string]any{CtxAPI5xx: "0", CtxIteratorAge: 60})
	if a := alarmsByID(s); a["Api5xxAlarm"]["Threshold"] != float64(0) || a["IteratorAgeAlarm"]["Threshold"] != float64(60_000) {
		t.Errorf("context thresholds 0 and 60 s: %v, %v", a["Api5xxAlarm"]["Threshold"], a["IteratorAgeAlarm"]["Threshold"])
	}
}

// TestInvalidPropsNameTheProp: every refusal names the prop, none panics
// (CDK's own refusal of a 1.5 s batching window was a panic at synth).
func TestInvalidPropsNameTheProp(t *testing.T) {
	cases := []struct {
		prop string
		p    Props
	}{
		{"BatchingWindow", Props{BatchingWindow: Duration(1500 * time.Millisecond)}},
		{"BatchingWindow", Props{BatchingWindow: Duration(-time.Second)}},
		{"BatchingWindow", Props{BatchingWindow: Duration(301 * time.Second)}},
		{"RetryAttempts", Props{RetryAttempts: Int(-1)}},
		{"RetryAttempts", Props{RetryAttempts: Int(10001)}},
		{"API5xx", Props{API5xx: Int(-1)}},
		{"IteratorAgeSeconds", Props{IteratorAgeSeconds: Int(-5)}},
		{"IngestTimeout", Props{IngestTimeout: 10500 * time.Millisecond}},
		{"MaxRecordAge", Props{MaxRecordAge: 30 * time.Second}},
		// A batch is given up on before the created stream (24 h) trims it.
		{"MaxRecordAge", Props{MaxRecordAge: 23*time.Hour + time.Second}},
		{"FailedBatchRetentionDays", Props{FailedBatchRetentionDays: 6}},
		{"RetentionDays", Props{RetentionDays: -1}},
		{"Shards", Props{Shards: 5000}},
		{"BatchSize", Props{BatchSize: 20000}},
		{"QueryMemoryMB", Props{QueryMemoryMB: 64}},
		{"LogLevel", Props{LogLevel: "loud"}},
		{"LogLevel", Props{LogLevel: "info+2"}},
		{"GSIProjection", Props{GSIProjection: "keys"}},
		{"GSICopies", Props{GSICopies: "sometimes"}},
		{"ShardOverrides", Props{ShardOverrides: map[string]int{"hot": 0}}},
		{"ArchiveExpiryDays", Props{ArchiveExpiryDays: 30}},
		{"ArchiveExpiryDays", Props{ArchiveExpiryDays: 100, RetentionDays: 365}},
		{"ArchiveExpiryDays", Props{ArchiveExpiryDays: -1}},
	}
	for _, c := range cases {
		err := validateWithoutPanic(t, c.p)
		if err == nil || !strings.Contains(err.Error(), c.prop+" ") && !strings.Contains(err.Error(), c.prop+":") {
			t.Errorf("%+v: error %v does not name %s", c.p, err, c.prop)
		}
	}
	for _, p := range []Props{
		{BatchingWindow: Duration(2 * time.Second), RetryAttempts: Int(0), LogLevel: "WARN"},
		{StreamARN: existing}, {MaxRecordAge: 23 * time.Hour}, {FailedBatchRetentionDays: 7},
		{StreamARN: existing, MaxRecordAge: 7 * 24 * time.Hour}, // an existing stream may keep records longer
		{ArchiveExpiryDays: 31}, {Archive: Bool(false), ArchiveExpiryDays: 3650},
	} {
		if err := validateWithoutPanic(t, p); err != nil {
			t.Errorf("valid props %+v refused: %v", p, err)
		}
	}
	if err := (Props{MaxRecordAge: 30 * time.Hour}).Validate(); err == nil || !strings.Contains(err.Error(), "the created stream keeps records 24h, so a batch must be given up on by 23h") {
		t.Errorf("a record age past the created stream's retention: %v, want the retention named", err)
	}
	// NewPipeline still panics, as constructs do, but with the same error.
	defer func() {
		if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "BatchingWindow is 1.5s") {
			t.Errorf("NewPipeline with a 1.5 s window: %v", r)
		}
	}()
	NewPipeline(awscdk.NewStack(awscdk.NewApp(nil), jsii.String("S"), nil), "P", &Props{BatchingWindow: Duration(1500 * time.Millisecond)})
}

const existing = "arn:aws:kinesis:us-east-1:000000000000:stream/existing"

func validateWithoutPanic(t *testing.T, p Props) (err error) {
	defer func() {
		if r := recover(); r != nil {
			t.Errorf("%+v: Validate panicked: %v", p, r)
		}
	}()
	return p.Validate()
}

// TestLogLevelIsOneSpelling: the stack writes LogLevel to both functions
// in the spelling both parse alike.
func TestLogLevelIsOneSpelling(t *testing.T) {
	s := synthesize(t, &Props{LogLevel: " WARN "}, nil)
	for id, fn := range s.resources("AWS::Lambda::Function") {
		vars := props(fn)["Environment"].(map[string]any)["Variables"].(map[string]any)
		if vars[ingest.EnvLogLevel] != "warn" || vars[query.EnvLogLevel] != "warn" {
			t.Errorf("%s: LOG_LEVEL %v", id, vars[ingest.EnvLogLevel])
		}
	}
}

// TestGSICopiesDefaultsToAlways: unless GSICopies is set, the ingest
// function gives every event a GSI copy, as it always did.
func TestGSICopiesDefaultsToAlways(t *testing.T) {
	s := synthesize(t, nil, nil)
	for id, fn := range s.resources("AWS::Lambda::Function") {
		if !strings.HasPrefix(id, "PIngest") {
			continue
		}
		vars := props(fn)["Environment"].(map[string]any)["Variables"].(map[string]any)
		if vars[ingest.EnvGSICopies] != "always" {
			t.Errorf("%s: GSI_COPIES %v, want always", id, vars[ingest.EnvGSICopies])
		}
	}
}
