package shardline

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/jsii-runtime-go"

	"github.com/shardline/shardline/internal/emf"
	"github.com/shardline/shardline/internal/ingest"
	"github.com/shardline/shardline/internal/query"
	"github.com/shardline/shardline/internal/tenant"
)

// The tenants of the tests: hostile neighbours (team-ab beside team-a, a
// tenant called v1) and one with a stream.
var testTenants = map[string]Tenant{
	"team-a":  {Sources: []string{"team-a/", "urn:a:"}, Stream: true},
	"team-ab": {Sources: []string{"team-ab/"}},
	"v1":      {Sources: []string{"v1/"}},
}

var tenantSynthCache synth

// tenantSynth is the stack with testTenants, in a stack with an account
// and region, so that ARNs resolve. Its principal "Outside" is granted
// team-ab's write and read routes with the Grant methods.
func tenantSynth(t *testing.T) synth {
	t.Helper()
	if tenantSynthCache.tpl != nil {
		return tenantSynthCache
	}
	app := awscdk.NewApp(nil)
	stack := awscdk.NewStack(app, jsii.String("S"), &awscdk.StackProps{Env: &awscdk.Environment{Account: jsii.String(testAccount), Region: jsii.String(testRegion)}})
	pl := NewPipeline(stack, "P", &Props{CodeDir: codeDir(t), Tenants: testTenants})
	outside := awsiam.NewRole(stack, jsii.String("Outside"), &awsiam.RoleProps{AssumedBy: awsiam.NewAccountRootPrincipal()})
	pl.GrantTenantWrite("team-ab", outside)
	pl.GrantTenantRead("team-ab", outside)
	tenantSynthCache = synthOf(t, app, stack)
	return tenantSynthCache
}

const (
	testAccount = "123456789012"
	testRegion  = "eu-west-1"
	testAPIID   = "a1b2c3d4e5"
)

// resolve evaluates the intrinsics a policy or an environment holds, as
// CloudFormation would in testAccount and testRegion: the API's id is
// testAPIID, a role's id "AROA" and its logical id, another resource's
// ARN names its logical id.
func resolve(t *testing.T, s synth, v any) string {
	t.Helper()
	switch v := v.(type) {
	case string:
		return v
	case map[string]any:
		if ref, ok := v["Ref"].(string); ok {
			switch ref {
			case "AWS::Partition":
				return "aws"
			case "AWS::Region":
				return testRegion
			case "AWS::AccountId":
				return testAccount
			}
			if s.tpl["Resources"].(map[string]any)[ref].(map[string]any)["Type"] == "AWS::ApiGatewayV2::Api" {
				return testAPIID
			}
			return "ref-" + ref
		}
		if att, ok := v["Fn::GetAtt"].([]any); ok {
			id, name := att[0].(string), att[1].(string)
			typ := s.tpl["Resources"].(map[string]any)[id].(map[string]any)["Type"]
			switch {
			case typ == "AWS::IAM::Role" && name == "RoleId":
				return "AROA" + id
			case typ == "AWS::IAM::Role" && name == "Arn":
				return "arn:aws:iam::" + testAccount + ":role/" + id
			case typ == "AWS::Kinesis::Stream" && name == "Arn":
				return "arn:aws:kinesis:" + testRegion + ":" + testAccount + ":stream/" + id
			}
			return "getatt-" + id + "-" + name
		}
		if join, ok := v["Fn::Join"].([]any); ok {
			var parts []string
			for _, p := range join[1].([]any) {
				parts = append(parts, resolve(t, s, p))
			}
			return strings.Join(parts, join[0].(string))
		}
	}
	t.Fatalf("cannot resolve %v", v)
	return ""
}

// statement is one policy statement with its resources resolved.
type statement struct {
	Effect    string   `json:"Effect"`
	Action    []string `json:"Action"`
	Resource  []string `json:"Resource"`
	Principal any      `json:"Principal,omitempty"`
}

// rolePolicies are the identity policies attached to each tenant role and
// to the role "Outside", by the role's logical id, resolved.
func rolePolicies(t *testing.T, s synth) map[string][]statement {
	out := map[string][]statement{}
	for _, pol := range s.resources("AWS::IAM::Policy") {
		p := props(pol)
		for _, r := range p["Roles"].([]any) {
			role := r.(map[string]any)["Ref"].(string)
			if !strings.HasPrefix(role, "PTenant") && !strings.HasPrefix(role, "Outside") {
				continue // the functions' roles: iam_test.go
			}
			for _, st := range p["PolicyDocument"].(map[string]any)["Statement"].([]any) {
				out[role] = append(out[role], resolveStatement(t, s, st.(map[string]any)))
			}
		}
	}
	return out
}

func resolveStatement(t *testing.T, s synth, st map[string]any) statement {
	list := func(v any) []any {
		if l, ok := v.([]any); ok {
			return l
		}
		return []any{v}
	}
	out := statement{Effect: st["Effect"].(string)}
	for _, a := range list(st["Action"]) {
		out.Action = append(out.Action, a.(string))
	}
	for _, r := range list(st["Resource"]) {
		out.Resource = append(out.Resource, resolve(t, s, r))
	}
	if st["NotResource"] != nil || st["NotAction"] != nil || st["Condition"] != nil {
		t.Fatalf("a statement this test does not read: %v", st)
	}
	return out
}

// roleID is the logical id of the construct id's role.
func roleID(t *testing.T, s synth, construct string) string {
	for id := range s.resources("AWS::IAM::Role") {
		if strings.HasPrefix(id, construct) && !strings.Contains(id[len(construct):], "Default") {
			return id
		}
	}
	t.Fatalf("no role %s", construct)
	return ""
}

func routeARN(method, name, route string) string {
	return fmt.Sprintf("arn:aws:execute-api:%s:%s:%s/$default/%s/v1/tenants/%s/%s", testRegion, testAccount, testAPIID, method, name, route)
}

// TestTenantGrantsAreExactRoutes: each tenant's writer may invoke exactly
// its POST route, and its reader exactly its four GET routes, ARNs in
// full with no wildcard; the writer of a tenant with a stream may put
// records on that stream only; the Grant methods give another principal
// exactly the same.
func TestTenantGrantsAreExactRoutes(t *testing.T) {
	s := tenantSynth(t)
	pols := rolePolicies(t, s)
	streamOf := func(name string) string {
		for id := range s.resources("AWS::Kinesis::Stream") {
			if strings.HasPrefix(id, "PTenant"+tenantID(name)+"Stream") {
				return "arn:aws:kinesis:" + testRegion + ":" + testAccount + ":stream/" + id
			}
		}
		return ""
	}
	check := func(who string, got []statement, name string, write bool) {
		t.Helper()
		var invoke, kinesis []string
		for _, st := range got {
			if st.Effect != "Allow" {
				t.Errorf("%s: a %s statement", who, st.Effect)
			}
			for _, a := range st.Action {
				switch {
				case a == "execute-api:Invoke":
					invoke = append(invoke, st.Resource...)
				case strings.HasPrefix(a, "kinesis:"):
					kinesis = append(kinesis, st.Resource...)
				default:
					t.Errorf("%s may %s", who, a)
				}
			}
		}
		for _, arn := range append(slices.Clone(invoke), kinesis...) {
			if strings.Contains(arn, "*") {
				t.Errorf("%s: a wildcard in %s", who, arn)
			}
		}
		want := []string{routeARN("POST", name, "events")}
		if !write {
			want = []string{routeARN("GET", name, "counts"), routeARN("GET", name, "events"), routeARN("GET", name, "quarantine"), routeARN("GET", name, "sources")}
		}
		slices.Sort(invoke)
		if !reflect.DeepEqual(invoke, want) {
			t.Errorf("%s may invoke\n%s\nwant exactly\n%s", who, strings.Join(invoke, "\n"), strings.Join(want, "\n"))
		}
		var wantStream []string
		if write && streamOf(name) != "" {
			wantStream = []string{streamOf(name)}
		}
		if kinesis = slices.Compact(kinesis); !reflect.DeepEqual(kinesis, wantStream) {
			t.Errorf("%s may put records on %v, want %v", who, kinesis, wantStream)
		}
	}
	for name := range testTenants {
		id := "PTenant" + tenantID(name)
		check(name+"'s writer", pols[roleID(t, s, id+"Writer")], name, true)
		check(name+"'s reader", pols[roleID(t, s, id+"Reader")], name, false)
	}
	var write, read []statement
	for _, st := range pols[roleID(t, s, "Outside")] {
		if slices.Contains(st.Action, "execute-api:Invoke") && strings.Contains(st.Resource[0], "/POST/") {
			write = append(write, st)
		} else {
			read = append(read, st)
		}
	}
	check("a principal granted team-ab's writes", write, "team-ab", true)
	check("a principal granted team-ab's reads", read, "team-ab", false)
}

// TestGrantUnknownTenantPanics: a grant names a tenant of the stack.
func TestGrantUnknownTenantPanics(t *testing.T) {
	app := awscdk.NewApp(nil)
	stack := awscdk.NewStack(app, jsii.String("S"), nil)
	pl := NewPipeline(stack, "P", &Props{CodeDir: codeDir(t), Tenants: map[string]Tenant{"team-a": {Sources: []string{"a/"}}}})
	role := awsiam.NewRole(stack, jsii.String("R"), &awsiam.RoleProps{AssumedBy: awsiam.NewAccountRootPrincipal()})
	for _, name := range []string{"team-b", "Team-a", "team-a/", ""} {
		func() {
			defer func() {
				if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), fmt.Sprintf("no tenant %q", name)) {
					t.Errorf("GrantTenantRead(%q): %v", name, r)
				}
			}()
			pl.GrantTenantRead(name, role)
		}()
	}
}

// TestTenantRoutesNeedIAMAndThrottles: each tenant has its five routes,
// with its name in the path, IAM authorization, the ingest or query
// function's integration and the ingest or query throttle; the /v1/...
// routes are as they are without tenants.
func TestTenantRoutesNeedIAMAndThrottles(t *testing.T) {
	s := tenantSynth(t)
	integrations := map[string]string{} // logical id -> function
	for id, in := range s.resources("AWS::ApiGatewayV2::Integration") {
		uri, _ := json.Marshal(props(in)["IntegrationUri"])
		switch {
		case strings.Contains(string(uri), `"PIngest`):
			integrations[id] = "ingest"
		case strings.Contains(string(uri), `"PQuery`):
			integrations[id] = "query"
		}
	}
	var keys []string
	stage := props(s.one(t, "AWS::ApiGatewayV2::Stage"))
	settings := stage["RouteSettings"].(map[string]any)
	for _, r := range s.resources("AWS::ApiGatewayV2::Route") {
		p := props(r)
		key := p["RouteKey"].(string)
		keys = append(keys, key)
		if p["AuthorizationType"] != "AWS_IAM" {
			t.Errorf("route %s has authorization %v", key, p["AuthorizationType"])
		}
		target := resolve(t, s, p["Target"])
		fn := integrations[strings.TrimPrefix(strings.TrimPrefix(target, "integrations/"), "ref-")]
		want, limits := "query", map[string]any{"ThrottlingRateLimit": float64(100), "ThrottlingBurstLimit": float64(200)}
		if strings.HasPrefix(key, "POST ") {
			want, limits = "ingest", map[string]any{"ThrottlingRateLimit": float64(1000), "ThrottlingBurstLimit": float64(2000)}
		}
		if fn != want {
			t.Errorf("route %s reaches %q (%s), want the %s function", key, fn, target, want)
		}
		if !reflect.DeepEqual(settings[key], limits) {
			t.Errorf("route %s is throttled %v, want %v", key, settings[key], limits)
		}
	}
	want := []string{"GET /v1/counts", "GET /v1/events", "GET /v1/quarantine", "GET /v1/sources", "POST /v1/events"}
	for name := range testTenants {
		for _, r := range []string{"GET counts", "GET events", "GET quarantine", "GET sources", "POST events"} {
			method, route, _ := strings.Cut(r, " ")
			want = append(want, method+" /v1/tenants/"+name+"/"+route)
		}
	}
	sort.Strings(keys)
	sort.Strings(want)
	if !reflect.DeepEqual(keys, want) {
		t.Errorf("routes\n%s\nwant\n%s", strings.Join(keys, "\n"), strings.Join(want, "\n"))
	}
	if len(settings) != len(want) {
		t.Errorf("%d route settings for %d routes", len(settings), len(want))
	}
	// The stage names the tenant routes in its settings: it waits for them.
	for id, st := range s.resources("AWS::ApiGatewayV2::Stage") {
		deps, _ := json.Marshal(st["DependsOn"])
		if n := strings.Count(string(deps), "Route"); n != 5*len(testTenants) {
			t.Errorf("%s depends on %d tenant routes, want %d: %s", id, n, 5*len(testTenants), deps)
		}
	}
	// One permission a function for the tenant routes, limited to them.
	for id, perm := range s.resources("AWS::Lambda::Permission") {
		if !strings.Contains(id, "Tenant") {
			continue
		}
		if arn := resolve(t, s, props(perm)["SourceArn"]); arn != "arn:aws:execute-api:"+testRegion+":"+testAccount+":"+testAPIID+"/*/*/v1/tenants/*" {
			t.Errorf("%s lets the API invoke from %s", id, arn)
		}
	}
}

// TestSharedRoutesUnchangedByTenants: the /v1/... routes, their
// integrations, permissions and throttles are the same with tenants as
// without.
func TestSharedRoutesUnchangedByTenants(t *testing.T) {
	// Both environment-agnostic: ARNs are spelled alike.
	with, without := synthesize(t, &Props{Tenants: testTenants}, nil), synthesize(t, &Props{}, nil)
	shared := func(s synth) map[string]any {
		out := map[string]any{}
		for _, typ := range []string{"AWS::ApiGatewayV2::Route", "AWS::ApiGatewayV2::Integration", "AWS::Lambda::Permission"} {
			for id, r := range s.resources(typ) {
				if typ == "AWS::Lambda::Permission" && props(r)["Principal"] != "apigateway.amazonaws.com" {
					continue // not the API's: the count fold's schedule, say
				}
				if !strings.Contains(id, "Tenant") {
					out[id] = r
				}
			}
		}
		settings := props(s.one(t, "AWS::ApiGatewayV2::Stage"))["RouteSettings"].(map[string]any)
		for k, v := range settings {
			if !strings.Contains(k, "/tenants/") {
				out["setting "+k] = v
			}
		}
		return out
	}
	a, b := jsonOf(t, shared(with)), jsonOf(t, shared(without))
	if len(b.(map[string]any)) != 5+2+5+5 {
		t.Fatalf("found %d shared routes, integrations, permissions and settings, want 17", len(b.(map[string]any)))
	}
	if !reflect.DeepEqual(a, b) {
		ja, _ := json.Marshal(a)
		jb, _ := json.Marshal(b)
		t.Errorf("the shared routes changed with tenants:\n%s\nwithout:\n%s", ja, jb)
	}
}

// TestNoTenantsLeavesTheTemplateAsIs: an empty tenant configuration, by
// Props or by context, synthesizes exactly the template of none.
func TestNoTenantsLeavesTheTemplateAsIs(t *testing.T) {
	none := synthesize(t, &Props{}, nil) // not defaultSynth's, which other tests edit
	want, _ := json.Marshal(none.tpl)
	for what, s := range map[string]synth{
		"Props.Tenants empty":  synthesize(t, &Props{Tenants: map[string]Tenant{}}, nil),
		"shardline:tenants {}": synthesize(t, nil, map[string]any{CtxTenants: "{}"}),
	} {
		got, _ := json.Marshal(s.tpl)
		if string(got) != string(want) {
			t.Errorf("%s: the template differs from the one without tenants (%d bytes, want %d)", what, len(got), len(want))
		}
	}
	if strings.Contains(string(want), "Tenant") || strings.Contains(string(want), tenant.EnvTenants) {
		t.Error("the template without tenants mentions tenants")
	}
}

// TestOverlappingTenantsFailSynth: overlapping prefixes, a bad name, and
// tenants too many for the functions' environment are synth errors that
// say which and what to do, from Props and from context.
func TestOverlappingTenantsFailSynth(t *testing.T) {
	many := map[string]Tenant{}
	for i := range 12 {
		name := fmt.Sprintf("team-%02d", i)
		many[name] = Tenant{Sources: []string{name + "/"}, Stream: true}
	}
	for _, c := range []struct {
		tenants map[string]Tenant
		want    []string
	}{
		{map[string]Tenant{"team-a": {Sources: []string{"team-a"}}, "team-ab": {Sources: []string{"team-ab/"}}},
			[]string{"Tenants: tenants: tenant team-ab's source prefix \"team-ab/\" begins tenant team-a's source prefix \"team-a\""}},
		{map[string]Tenant{"a": {Sources: []string{"shared/"}}, "b": {Sources: []string{"shared/"}}}, []string{"tenant b's", "tenant a's", `"shared/"`}},
		{map[string]Tenant{"Team-A": {Sources: []string{"a/"}}}, []string{`tenant name "Team-A"`}},
		{map[string]Tenant{"team-a": {}}, []string{"tenant team-a: sources is empty"}},
		{many, []string{"over the 3072 shardline keeps for them of Lambda's 4 KB"}},
	} {
		err := (&Props{Tenants: c.tenants}).Validate()
		for _, w := range c.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%v: %v, want an error saying %q", c.tenants, err, w)
			}
		}
		func() {
			defer func() {
				if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), c.want[0]) {
					t.Errorf("NewPipeline with %v: %v", c.tenants, r)
				}
			}()
			app := awscdk.NewApp(nil)
			NewPipeline(awscdk.NewStack(app, jsii.String("S"), nil), "P", &Props{Tenants: c.tenants})
		}()
	}
	for _, v := range []any{`{"a": {"sources": ["x/"]}, "b": {"sources": ["x/y"]}}`,
		map[string]any{"a": map[string]any{"sources": []any{"x/"}}, "b": map[string]any{"sources": []any{"x/y"}}}} {
		app := awscdk.NewApp(&awscdk.AppProps{Context: &map[string]any{CtxTenants: v}})
		_, err := PropsFromContext(app.Node())
		if err == nil || !strings.Contains(err.Error(), CtxTenants) || !strings.Contains(err.Error(), `tenant b's source prefix "x/y" begins tenant a's source prefix "x/"`) {
			t.Errorf("context %v: %v", v, err)
		}
	}
	for _, v := range []any{`{"a": {"sources": ["x/"], "Stream": true}}`, `[]`, `{"a": {"sources": ["x/"]}`} {
		app := awscdk.NewApp(&awscdk.AppProps{Context: &map[string]any{CtxTenants: v}})
		if _, err := PropsFromContext(app.Node()); err == nil || !strings.Contains(err.Error(), CtxTenants) {
			t.Errorf("context %v: %v", v, err)
		}
	}
}

// TestTenantsFromContext: the context key, as a string or as cdk.json's
// object, reaches Props.Tenants canonical; {} is no tenants.
func TestTenantsFromContext(t *testing.T) {
	want := map[string]Tenant{"team-a": {Sources: []string{"team-a/", "urn:a:"}, Stream: true}, "team-b": {Sources: []string{"b/"}}}
	for _, v := range []any{
		`{"team-b": {"sources": ["b/", "b/"]}, "team-a": {"sources": ["urn:a:", "team-a/"], "stream": true}}`,
		map[string]any{"team-a": map[string]any{"sources": []any{"urn:a:", "team-a/"}, "stream": true}, "team-b": map[string]any{"sources": []any{"b/"}, "stream": false}},
	} {
		app := awscdk.NewApp(&awscdk.AppProps{Context: &map[string]any{CtxTenants: v}})
		p, err := PropsFromContext(app.Node())
		if err != nil || !reflect.DeepEqual(p.Tenants, want) {
			t.Errorf("context %v: %v, %v; want %v", v, p.Tenants, err, want)
		}
	}
	app := awscdk.NewApp(&awscdk.AppProps{Context: &map[string]any{CtxTenants: "{}"}})
	if p, err := PropsFromContext(app.Node()); err != nil || p.Tenants != nil {
		t.Errorf("{}: %v, %v", p.Tenants, err)
	}
}

// TestTenantEnvironment: both functions hold the canonical tenants and
// the ids of the tenants' roles; the ingest function also the ARN of each
// tenant's stream; and what they hold parses with the functions' reader.
func TestTenantEnvironment(t *testing.T) {
	s := tenantSynth(t)
	canonical, err := tenant.New(testTenants)
	if err != nil {
		t.Fatal(err)
	}
	for id, fn := range s.resources("AWS::Lambda::Function") {
		vars := props(fn)["Environment"].(map[string]any)["Variables"].(map[string]any)
		env := map[string]string{}
		for k, v := range vars {
			env[k] = resolve(t, s, v)
		}
		ingest, query := strings.HasPrefix(id, "PIngest"), strings.HasPrefix(id, "PQuery")
		_, hasTenants := env[tenant.EnvTenants]
		_, hasStreams := env[tenant.EnvStreams]
		_, hasRoles := env[tenant.EnvRoles]
		if hasTenants != (ingest || query) || hasRoles != (ingest || query) || hasStreams != ingest {
			t.Errorf("%s: tenants %v, roles %v, streams %v", id, hasTenants, hasRoles, hasStreams)
		}
		if !ingest && !query {
			continue
		}
		if env[tenant.EnvTenants] != canonical.String() {
			t.Errorf("%s: %s = %s, want %s", id, tenant.EnvTenants, env[tenant.EnvTenants], canonical.String())
		}
		cfg, err := tenant.FromEnv(func(k string) string { return env[k] })
		if err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		for name := range testTenants {
			r := cfg.Roles(name)
			if r.Writer != "AROA"+roleID(t, s, "PTenant"+tenantID(name)+"Writer") || r.Reader != "AROA"+roleID(t, s, "PTenant"+tenantID(name)+"Reader") {
				t.Errorf("%s: %s's roles %+v", id, name, r)
			}
		}
		if ingest {
			var streams map[string]string
			json.Unmarshal([]byte(env[tenant.EnvStreams]), &streams)
			if len(streams) != 1 || !strings.Contains(streams["team-a"], ":stream/PTenantTeamXaStream") {
				t.Errorf("%s: %s = %v, want team-a's stream only", id, tenant.EnvStreams, streams)
			}
			if owner, ok := cfg.StreamOwner(streams["team-a"]); owner != "team-a" || !ok {
				t.Errorf("%s: the stream's owner %q", id, owner)
			}
		}
	}
}

// TestEnvironmentBudget: what the ingest and query functions' environment
// holds besides the tenants fits the 1 KB of Lambda's 4 KB that
// tenant.MaxEnvBytes leaves, with the table's name (at most 255 bytes) and
// the cursor secret's ARN (a name of at most 512, and 80 more) at their
// longest.
func TestEnvironmentBudget(t *testing.T) {
	s := defaultSynth(t)
	checked := 0
	for id, fn := range s.resources("AWS::Lambda::Function") {
		if !strings.HasPrefix(id, "PIngest") && !strings.HasPrefix(id, "PQuery") {
			continue
		}
		checked++
		size := 0
		for k, v := range props(fn)["Environment"].(map[string]any)["Variables"].(map[string]any) {
			size += len(k)
			b, _ := json.Marshal(v)
			switch str, ok := v.(string); {
			case ok:
				size += len(str)
			case strings.Contains(string(b), `"PEvents`):
				size += 255
			case strings.Contains(string(b), `"PCursorSecret`):
				size += 512 + 80
			default:
				t.Errorf("%s: %s is %s, of no known length", id, k, b)
			}
		}
		if size > 4096-tenant.MaxEnvBytes {
			t.Errorf("%s: %d bytes of environment besides the tenants, over %d", id, size, 4096-tenant.MaxEnvBytes)
		}
	}
	if checked != 2 {
		t.Fatalf("checked %d functions", checked)
	}
}

// TestTenantStreams: a tenant with "stream": true has its own stream,
// on-demand and encrypted as the shared one, read by the ingest function
// with the shared mapping's settings and giving up to the same bucket,
// under the ingest function's own prefixes; its given-up and dropped
// records alarm.
func TestTenantStreams(t *testing.T) {
	s := tenantSynth(t)
	streams := s.resources("AWS::Kinesis::Stream")
	if len(streams) != 2 {
		t.Fatalf("%d streams, want the shared one and team-a's", len(streams))
	}
	var shared, own map[string]any
	for id, st := range streams {
		if strings.HasPrefix(id, "PTenantTeamXaStream") {
			own = props(st)
		} else {
			shared = props(st)
		}
	}
	if own == nil || !reflect.DeepEqual(own, shared) {
		t.Errorf("team-a's stream %v, want as the shared one %v", own, shared)
	}
	var mappings []map[string]any
	for _, m := range s.resources("AWS::Lambda::EventSourceMapping") {
		if arn, _ := json.Marshal(props(m)["EventSourceArn"]); !strings.Contains(string(arn), "StreamArn") {
			mappings = append(mappings, props(m))
		}
	}
	if len(mappings) != 2 {
		t.Fatalf("%d Kinesis mappings, want 2", len(mappings))
	}
	a, b := jsonOf(t, mappings[0]).(map[string]any), jsonOf(t, mappings[1]).(map[string]any)
	for _, m := range []map[string]any{a, b} {
		delete(m, "EventSourceArn")
	}
	if !reflect.DeepEqual(a, b) {
		t.Errorf("the two Kinesis mappings differ beyond their stream:\n%v\n%v", a, b)
	}
	var deny []string
	for _, st := range s.bucketPolicy(t, s.failedBatchesID(t)) {
		st := st.(map[string]any)
		if st["Sid"] == "OnlyIngestUnderItsMappings" {
			for _, r := range st["NotResource"].([]any) {
				deny = append(deny, resolve(t, s, r))
			}
		}
		if st["Sid"] == "OnlyIngestUnderItsMapping" {
			t.Error("the ingest function is kept to one mapping's prefix: the other's batches could not be given up")
		}
	}
	if len(deny) != 2 || !strings.Contains(deny[0]+deny[1], "TenantTeamXaStream") {
		t.Errorf("the ingest function may put given-up batches outside %v", deny)
	}
	alarms := map[string]map[string]any{}
	for id, a := range s.resources("AWS::CloudWatch::Alarm") {
		alarms[id] = props(a)
	}
	for _, want := range []string{"PTenantTeamXaIngestGivenUpAlarm", "PTenantTeamXaIngestDroppedAlarm"} {
		found := false
		for id := range alarms {
			found = found || strings.HasPrefix(id, want)
		}
		if !found {
			t.Errorf("no %s", want)
		}
	}
	outs := s.tpl["Outputs"].(map[string]any)
	for _, o := range []string{"TenantTeamXaStreamName", "TenantTeamXaIngestMappingId", "TenantTeamXaWriterRoleArn", "TenantV1ReaderRoleArn"} {
		if outs[o] == nil {
			t.Errorf("no output %s", o)
		}
	}
	if d := fmt.Sprint(outs["TenantTeamXaIngestMappingId"].(map[string]any)["Description"]); !strings.Contains(d, "--ingest-mapping") {
		t.Errorf("the tenant mapping's output says %q, not the redrive flag that takes it", d)
	}
}

func (s synth) failedBatchesID(t *testing.T) string {
	for id := range s.resources("AWS::S3::Bucket") {
		if strings.HasPrefix(id, "PFailedBatches") {
			return id
		}
	}
	t.Fatal("no FailedBatches bucket")
	return ""
}

// TestTenantRefusedAlarm: with tenants, an alarm on the first refusal
// either function counts; without, none.
func TestTenantRefusedAlarm(t *testing.T) {
	find := func(s synth) map[string]any {
		for id, a := range s.resources("AWS::CloudWatch::Alarm") {
			if strings.HasPrefix(id, "PTenantRefusedAlarm") {
				return props(a)
			}
		}
		return nil
	}
	if find(defaultSynth(t)) != nil {
		t.Error("a tenant alarm without tenants")
	}
	a := find(tenantSynth(t))
	if a == nil {
		t.Fatal("no TenantRefusedAlarm")
	}
	if a["Threshold"] != float64(0) || a["ComparisonOperator"] != "GreaterThanThreshold" || a["TreatMissingData"] != "notBreaching" {
		t.Errorf("alarm %v", a)
	}
	var fns []string
	for _, m := range a["Metrics"].([]any) {
		stat, ok := m.(map[string]any)["MetricStat"].(map[string]any)
		if !ok {
			continue
		}
		metric := stat["Metric"].(map[string]any)
		dims := metric["Dimensions"].([]any)
		if metric["Namespace"] != emf.Namespace || metric["MetricName"] != tenant.MetricRefused || len(dims) != 1 || stat["Stat"] != "Sum" {
			t.Errorf("metric %v", stat)
			continue
		}
		d := dims[0].(map[string]any)
		if d["Name"] == "Function" {
			fns = append(fns, d["Value"].(string))
		}
	}
	slices.Sort(fns)
	// The dimension values are the ones the handlers' metrics carry
	// (functions/*/main.go give emf the FunctionName of each).
	if !reflect.DeepEqual(fns, []string{ingest.FunctionName, query.FunctionName}) {
		t.Errorf("the alarm counts the refusals of %v, want %s and %s", fns, ingest.FunctionName, query.FunctionName)
	}
}

// TestTenantStackPassesNag: cdk-nag finds nothing new with tenants.
func TestTenantStackPassesNag(t *testing.T) {
	noNagFindings(t, tenantSynth(t))
}

func TestTenantID(t *testing.T) {
	seen := map[string]string{}
	for _, name := range []string{"team-a", "teama", "team-a1", "team-a-1", "a", "x-a", "xa", "v1", "0-x", "0x"} {
		id := tenantID(name)
		for _, r := range id {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
				t.Errorf("tenantID(%q) = %q", name, id)
			}
		}
		if other, ok := seen[id]; ok {
			t.Errorf("%q and %q share the id %s", name, other, id)
		}
		seen[id] = name
	}
}
