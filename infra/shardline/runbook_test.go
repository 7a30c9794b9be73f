package shardline

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestRunbookNamesEveryAlarm: docs/operations.md, which each alarm's
// description points to, says what to do for every alarm the stack
// declares, with tenants or without, and names none it does not.
func TestRunbookNamesEveryAlarm(t *testing.T) {
	b, err := os.ReadFile("../../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	i := strings.Index(doc, "\n## Alarms")
	if i < 0 {
		t.Fatal(`docs/operations.md has no "## Alarms" section`)
	}
	table := doc[i:]
	if j := strings.Index(table[1:], "\n## "); j >= 0 {
		table = table[:j+1]
	}
	var named []string
	for _, m := range regexp.MustCompile("`([A-Za-z0-9]+Alarm)`").FindAllStringSubmatch(table, -1) {
		named = append(named, m[1])
	}
	// The alarms of a stack without tenants and of one with them.
	ids := defaultSynth(t).resources("AWS::CloudWatch::Alarm")
	for id, a := range tenantSynth(t).resources("AWS::CloudWatch::Alarm") {
		ids[id] = a
	}
	for id := range ids {
		found := false
		for _, n := range named {
			found = found || strings.Contains(id, n)
		}
		if !found {
			t.Errorf("alarm %s: docs/operations.md does not say what to do", id)
		}
	}
	for _, n := range named {
		found := false
		for id := range ids {
			found = found || strings.Contains(id, n)
		}
		if !found {
			t.Errorf("docs/operations.md names %s, which the stack does not declare", n)
		}
	}
}
