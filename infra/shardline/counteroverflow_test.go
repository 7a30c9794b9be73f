package shardline

import (
	"reflect"
	"strings"
	"testing"

	"github.com/shardline/shardline/internal/counts"
	"github.com/shardline/shardline/internal/emf"
)

// TestCounterOverflowAlarm: an alarm fires on the first event the counters
// count without its type, on the very metric the scheduled fold's roll-up
// writes (its namespace, name and dimensions), summed over five minutes.
func TestCounterOverflowAlarm(t *testing.T) {
	s := defaultSynth(t)
	var found []map[string]any
	for id, a := range s.resources("AWS::CloudWatch::Alarm") {
		if strings.Contains(id, "CounterOverflowAlarm") {
			found = append(found, props(a))
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d counter overflow alarms, want 1", len(found))
	}
	p := found[0]
	var dims []any
	for k, v := range counts.FoldDimensions() {
		dims = append(dims, map[string]any{"Name": k, "Value": v})
	}
	want := map[string]any{
		"Namespace":          emf.Namespace,
		"MetricName":         counts.MetricOverflow,
		"Dimensions":         dims,
		"Statistic":          "Sum",
		"Period":             float64(300),
		"Threshold":          float64(0),
		"ComparisonOperator": "GreaterThanThreshold",
		"EvaluationPeriods":  float64(1),
		"TreatMissingData":   "notBreaching",
	}
	for k, v := range want {
		if !reflect.DeepEqual(jsonOf(t, p[k]), jsonOf(t, v)) {
			t.Errorf("%s = %v, want %v", k, p[k], v)
		}
	}
}
