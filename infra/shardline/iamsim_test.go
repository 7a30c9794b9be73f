package shardline

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The independent evaluator: @cloud-copilot/iam-simulate, from npm, pinned
// in tools/package.json (a test-only tool; its AGPL covers running it here,
// and nothing of it ships).
const (
	iamSimulate = "@cloud-copilot/iam-simulate"
	toolsDir    = "../../tools"
)

// simCase is one request for the evaluator (testdata/iamsim/evaluate.cjs).
type simCase struct {
	Principal string `json:"principal"`
	Action    string `json:"action"`
	Resource  string `json:"resource"`
	Account   string `json:"account"`
	Policies  []any  `json:"policies"`
}

type simResult struct {
	Result string `json:"result"`
	Error  string `json:"error"`
}

// simulate runs cases through the evaluator, in one node process.
func simulate(t *testing.T, cases []simCase) []simResult {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node: %v (the policy evaluator runs on node, as the CDK does)", err)
	}
	pkg, err := os.ReadFile(filepath.Join(toolsDir, "node_modules", iamSimulate, "package.json"))
	if err != nil {
		t.Fatalf("%v (run make deps: npm installs the pinned %s into tools/node_modules)", err, iamSimulate)
	}
	var installed, pinned struct {
		Version         string            `json:"version"`
		DevDependencies map[string]string `json:"devDependencies"`
	}
	json.Unmarshal(pkg, &installed)
	manifest, _ := os.ReadFile(filepath.Join(toolsDir, "package.json"))
	json.Unmarshal(manifest, &pinned)
	if installed.Version != pinned.DevDependencies[iamSimulate] {
		t.Fatalf("tools/node_modules has %s %s, tools/package.json pins %q: run make deps", iamSimulate, installed.Version, pinned.DevDependencies[iamSimulate])
	}
	in, _ := json.Marshal(map[string]any{"cases": cases})
	cmd := exec.Command(node, filepath.Join("testdata", "iamsim", "evaluate.cjs"), toolsDir)
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the evaluator: %v\n%s", err, stderr.String())
	}
	var results []simResult
	if err := json.Unmarshal(out, &results); err != nil || len(results) != len(cases) {
		t.Fatalf("the evaluator answered %d results for %d cases (%v): %.500s", len(results), len(cases), err, out)
	}
	return results
}

// resolveDoc resolves every intrinsic in a policy document (resolve).
func resolveDoc(t *testing.T, s synth, v any) any {
	switch v := v.(type) {
	case map[string]any:
		if len(v) == 1 && (v["Ref"] != nil || v["Fn::GetAtt"] != nil || v["Fn::Join"] != nil) {
			return resolve(t, s, v)
		}
		out := map[string]any{}
		for k, x := range v {
			out[k] = resolveDoc(t, s, x)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = resolveDoc(t, s, x)
		}
		return out
	}
	return v
}

// policiesOf are the identity policies attached to a role, resolved.
func policiesOf(t *testing.T, s synth, role string) []any {
	var docs []any
	for _, pol := range s.resources("AWS::IAM::Policy") {
		for _, r := range props(pol)["Roles"].([]any) {
			if r.(map[string]any)["Ref"] == role {
				docs = append(docs, resolveDoc(t, s, props(pol)["PolicyDocument"]))
			}
		}
	}
	if len(docs) == 0 {
		t.Fatalf("no policy on %s", role)
	}
	return docs
}

// principal is a role of the stack and what it was granted.
type principal struct {
	name        string
	role        string // logical id
	tenant      string
	write, read bool
}

// TestTenantPoliciesOffline: the stack's policies, evaluated by an IAM
// evaluator that is not ours, let a principal granted a tenant call
// exactly that tenant's routes (its writer the POST, its reader the
// GETs), on the stage, and put records only on that tenant's stream:
// every tenant × route × method, beside tenant names that are near
// misses (team-ab beside team-a, v1, upper case, percent-encoded, with a
// slash or a dot segment), another stage, a longer path, and the /v1/...
// routes. (A literal "*" cannot be asked: the evaluator reads it as a
// pattern; "%2A" stands for it.)
func TestTenantPoliciesOffline(t *testing.T) {
	s := tenantSynth(t)
	var who []principal
	for name := range testTenants {
		id := "PTenant" + tenantID(name)
		who = append(who,
			principal{name + "'s writer", roleID(t, s, id+"Writer"), name, true, false},
			principal{name + "'s reader", roleID(t, s, id+"Reader"), name, false, true})
	}
	who = append(who, principal{"a role granted team-ab's writes and reads", roleID(t, s, "Outside"), "team-ab", true, true})

	own := []string{"team-a", "team-ab", "v1"}
	near := []string{"team-b", "team", "team-", "teama", "TEAM-A", "Team-a", "team-A", "team%2Da", "team%2da", "team-a%2F",
		"team-a/..", "team-a/.", "..", "%2A", "team-a%2A", "V1", "v1%2F", "v1/tenants/team-a"}
	type request struct {
		stage, method, path string
		tenant, route       string // the tenant and route the path names, if any
	}
	var reqs []request
	for _, method := range []string{"GET", "POST", "DELETE"} {
		for _, route := range []string{"events", "counts", "sources", "quarantine"} {
			reqs = append(reqs, request{stageName, method, "/v1/" + route, "", route})
			for _, n := range append(own, near...) {
				reqs = append(reqs, request{stageName, method, "/v1/tenants/" + n + "/" + route, n, route})
			}
			for _, n := range own {
				reqs = append(reqs,
					request{"prod", method, "/v1/tenants/" + n + "/" + route, n, route},
					request{stageName, method, "/v1/tenants/" + n + "/" + route + "/", "", route},
					request{stageName, method, "/v1/tenants/" + n + "/" + route + "/x", "", route})
			}
		}
	}
	var cases []simCase
	var want []bool
	var what []string
	for _, p := range who {
		pols := policiesOf(t, s, p.role)
		for _, r := range reqs {
			arn := fmt.Sprintf("arn:aws:execute-api:%s:%s:%s/%s/%s%s", testRegion, testAccount, testAPIID, r.stage, r.method, r.path)
			cases = append(cases, simCase{"arn:aws:iam::" + testAccount + ":role/" + p.role, "execute-api:Invoke", arn, testAccount, pols})
			ok := r.stage == stageName && r.tenant == p.tenant &&
				(p.write && r.method == "POST" && r.route == "events" || p.read && r.method == "GET")
			want = append(want, ok)
			what = append(what, p.name+" invoking "+arn)
		}
		streams := map[string]string{"the shared stream": "arn:aws:kinesis:" + testRegion + ":" + testAccount + ":stream/ref-PStream"}
		for id := range s.resources("AWS::Kinesis::Stream") {
			if strings.HasPrefix(id, "PTenant") {
				streams[id] = "arn:aws:kinesis:" + testRegion + ":" + testAccount + ":stream/" + id
			}
		}
		for id, arn := range streams {
			for _, action := range []string{"kinesis:PutRecord", "kinesis:PutRecords", "kinesis:GetRecords"} {
				cases = append(cases, simCase{"arn:aws:iam::" + testAccount + ":role/" + p.role, action, arn, testAccount, pols})
				own := testTenants[p.tenant].Stream && strings.HasPrefix(id, "PTenant"+tenantID(p.tenant)+"Stream")
				want = append(want, p.write && own && action != "kinesis:GetRecords")
				what = append(what, p.name+" "+action+" on "+id)
			}
		}
	}
	// A control the matrix must catch: the grant HttpRoute.grantInvoke
	// makes of a {tenant} route.
	wildcard := map[string]any{"Version": "2012-10-17", "Statement": []any{map[string]any{"Effect": "Allow", "Action": "execute-api:Invoke",
		"Resource": fmt.Sprintf("arn:aws:execute-api:%s:%s:%s/*/POST/v1/tenants/*/events", testRegion, testAccount, testAPIID)}}}
	cases = append(cases, simCase{"arn:aws:iam::" + testAccount + ":role/Wildcard", "execute-api:Invoke",
		fmt.Sprintf("arn:aws:execute-api:%s:%s:%s/$default/POST/v1/tenants/team-ab/events", testRegion, testAccount, testAPIID), testAccount, []any{wildcard}})
	want = append(want, true)
	what = append(what, "the control: a {tenant} wildcard grant invoking team-ab's POST")

	results := simulate(t, cases)
	allowed := 0
	for i, r := range results {
		if r.Error != "" {
			t.Errorf("%s: the evaluator refused the case: %s", what[i], r.Error)
			continue
		}
		if got := r.Result == "Allowed"; got != want[i] {
			t.Errorf("%s: %s, want allowed %v", what[i], r.Result, want[i])
		}
		if r.Result == "Allowed" {
			allowed++
		}
	}
	// 3 tenants × (1 write + 4 reads) for their roles, 5 for the outside
	// role, 2 stream actions for team-a's writer, and the control.
	if wantAllowed := 3*5 + 5 + 2 + 1; allowed != wantAllowed {
		t.Errorf("%d of %d requests allowed, want %d", allowed, len(cases), wantAllowed)
	}
	t.Logf("%d requests evaluated by %s, %d allowed", len(cases), iamSimulate, allowed)
}
