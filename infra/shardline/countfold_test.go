package shardline

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/shardline/shardline/internal/counts"
	"github.com/shardline/shardline/internal/query"
)

// TestCountFoldSchedule: an EventBridge rule invokes the scheduled fold
// every minute (the 60 s lag promise rests on it), the fold and the query
// function agree on the counters' buckets, the fold's timeout leaves room
// for a minute of folds and the roll-up, and its two alarms exist: errors,
// and links written with no fold run for two minutes.
func TestCountFoldSchedule(t *testing.T) {
	s := defaultSynth(t)
	rule := props(s.one(t, "AWS::Events::Rule"))
	if rule["ScheduleExpression"] != "rate(1 minute)" || rule["State"] != "ENABLED" {
		t.Errorf("schedule %v, state %v", rule["ScheduleExpression"], rule["State"])
	}
	targets, _ := json.Marshal(rule["Targets"])
	if !strings.Contains(string(targets), "PCountFold") || strings.Count(string(targets), `"Id"`) != 1 {
		t.Errorf("the rule's targets are not the fold alone: %s", targets)
	}
	invokers := 0
	for _, perm := range s.resources("AWS::Lambda::Permission") {
		b, _ := json.Marshal(props(perm))
		if strings.Contains(string(b), "events.amazonaws.com") {
			invokers++
			if !strings.Contains(string(b), "PCountFold") || !strings.Contains(string(b), "CountFoldSchedule") {
				t.Errorf("EventBridge may invoke something else, or from another rule: %s", b)
			}
		}
	}
	if invokers != 1 {
		t.Errorf("%d permissions for EventBridge, want the fold's one", invokers)
	}
	buckets := map[string]any{}
	for id, fn := range s.resources("AWS::Lambda::Function") {
		vars := props(fn)["Environment"].(map[string]any)["Variables"].(map[string]any)
		switch {
		case strings.HasPrefix(id, "PCountFold"):
			buckets["fold"] = vars[counts.EnvBuckets]
			if props(fn)["Timeout"] != float64(CountFoldTimeoutSeconds) || CountFoldTimeoutSeconds <= counts.FoldSpan.Seconds() {
				t.Errorf("the fold's timeout %v leaves no room after a minute of folds", props(fn)["Timeout"])
			}
		case strings.HasPrefix(id, "PQuery"):
			buckets["query"] = vars[query.EnvCountBuckets]
		}
	}
	if buckets["fold"] == nil || buckets["fold"] != buckets["query"] {
		t.Errorf("buckets: fold %v, query %v", buckets["fold"], buckets["query"])
	}
	var errorsAlarm, stalled bool
	for id, a := range s.resources("AWS::CloudWatch::Alarm") {
		b, _ := json.Marshal(props(a))
		switch {
		case strings.Contains(id, "CountFoldErrorsAlarm"):
			errorsAlarm = strings.Contains(string(b), "PCountFold")
		case strings.Contains(id, "CountFoldStalledAlarm"):
			stalled = strings.Contains(string(b), counts.MetricLinks) && strings.Contains(string(b), counts.MetricFoldRuns) &&
				strings.Contains(string(b), `"Period":120`)
		}
	}
	if !errorsAlarm || !stalled {
		t.Errorf("fold alarms: errors %v, stalled %v", errorsAlarm, stalled)
	}
}
