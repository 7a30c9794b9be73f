package tenant

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/shardline/shardline/internal/emf"
)

func rolesConfig(t *testing.T) *Config {
	t.Helper()
	env := map[string]string{
		EnvTenants: `{"team-a": {"sources": ["team-a/"]}, "team-b": {"sources": ["team-b/"]}}`,
		EnvRoles:   `{"team-a": {"writer": "AROAAW", "reader": "AROAAR"}, "team-b": {"writer": "AROABW", "reader": "AROABR"}}`,
	}
	c, err := FromEnv(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestCallerMay: a stack role must be the route's own; another principal
// is left to IAM.
func TestCallerMay(t *testing.T) {
	c := rolesConfig(t)
	for _, tc := range []struct {
		user  string
		write bool
		want  bool
	}{
		{"AROAAW:session", true, true},
		{"AROAAW", true, true},
		{"AROAAR:session", false, true},
		{"AROAAR:session", true, false},  // the reader may not write
		{"AROAAW:session", false, false}, // nor the writer read
		{"AROABW:session", true, false},  // another tenant's writer
		{"AROABR:x", false, false},
		{"AROAAWX:session", true, true}, // not a stack role: a longer id is another role, left to IAM
		{"AIDAOTHER", true, true},       // a user of the deployer's own (GrantTenantWrite)
		{"", false, true},               // no IAM caller (local)
	} {
		if got := c.CallerMay("team-a", tc.user, tc.write); got != tc.want {
			t.Errorf("CallerMay(team-a, %q, write=%v) = %v, want %v", tc.user, tc.write, got, tc.want)
		}
	}
	// Without TENANT_ROLES, IAM alone decides.
	noRoles, _ := Parse([]byte(`{"team-a": {"sources": ["team-a/"]}}`))
	if !noRoles.CallerMay("team-a", "AROABW:s", true) {
		t.Error("without roles, a caller was refused")
	}
}

// TestNotOwnedIsTheContractsMessage pins DESIGN.md's 403 body, and bounds
// a hostile source.
func TestNotOwnedIsTheContractsMessage(t *testing.T) {
	if got := NotOwned("team-a", "team-b/x"); got != `source: "team-b/x" is not a source of tenant team-a` {
		t.Errorf("NotOwned = %s", got)
	}
	if got := NotOwned("team-a", strings.Repeat("x", 10000)); len(got) > 200 {
		t.Errorf("NotOwned of a long source is %d bytes", len(got))
	}
}

// TestReportCountsTheMetricTheAlarmReads: a refusal is one log line with
// the caller's ARN and the metric MetricRefused under the logger's
// dimensions.
func TestReportCountsTheMetricTheAlarmReads(t *testing.T) {
	var out bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&out, nil))
	Report(context.Background(), log, emf.NewInLog(&out, map[string]string{"Function": "ingest"}), time.Unix(0, 0),
		Refusal{Tenant: "team-a", Route: "POST /v1/tenants/team-a/events", Caller: "arn:aws:sts::1:assumed-role/w/s", Reason: "r"})
	var line map[string]any
	if err := json.Unmarshal(out.Bytes(), &line); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	if line[MetricRefused] != 1.0 || line["Function"] != "ingest" || line["caller_arn"] != "arn:aws:sts::1:assumed-role/w/s" || line["level"] != "WARN" {
		t.Errorf("line %s", out.String())
	}
	if !strings.Contains(out.String(), `"Name":"`+MetricRefused+`"`) {
		t.Errorf("no EMF definition of %s: %s", MetricRefused, out.String())
	}
}
