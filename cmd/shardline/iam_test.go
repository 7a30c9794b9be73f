package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/shardline/shardline/internal/ddbclient"
)

// This file checks the IAM permissions an operator command lists in its
// -h against the requests it sends: a recorder sits between the command's
// AWS SDK clients and the real local engines (DynamoDB Local, s3rver,
// kinesalite), and names the IAM action and the resource (a partition-key
// prefix, a bucket and key) each request needs. An operator who grants
// what -h lists gets no AccessDenied; -h lists nothing the command does
// not use.

// awsCall is what IAM authorizes of one request: an action, such as
// "dynamodb:Query", on a resource: a partition-key prefix of the events
// table ("M#"), a bucket's role and key ("FailedBatches aws/lambda/x"), or
// a stream ("the stream").
type awsCall struct{ Action, On string }

func (c awsCall) String() string { return c.Action + " on " + c.On }

// recorder is a reverse proxy in front of a local engine that notes the
// IAM action and resource of each request that passes.
type recorder struct {
	URL      string
	classify func(r *http.Request, body []byte) []awsCall
	mu       sync.Mutex
	calls    []awsCall
}

// credential is the access key of a SigV4 Authorization header.
var credential = regexp.MustCompile(`(Credential=)[^/]*/`)

// newRecorder starts a recorder in front of target; classify names each
// request's calls.
func newRecorder(t *testing.T, target string, classify func(*http.Request, []byte) []awsCall) *recorder {
	t.Helper()
	// A user name names a database of DynamoDB Local (ddbclient.Local,
	// testddb.SharedEnv), which keeps one per access key: the commands sign
	// with the environment's key, and the recorder sends their requests
	// under the target's.
	base, key := ddbclient.Local(target)
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{classify: classify}
	rp := &httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) {
		pr.SetURL(u)
		pr.Out.Host = u.Host
		if base != target {
			pr.Out.Header.Set("Authorization", credential.ReplaceAllString(pr.In.Header.Get("Authorization"), "${1}"+key+"/"))
		}
	}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		calls := classify(r, body)
		rec.mu.Lock()
		rec.calls = append(rec.calls, calls...)
		rec.mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(body))
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	rec.URL = srv.URL
	return rec
}

// take returns the calls noted since the last take, each once, sorted.
func (rec *recorder) take() []awsCall {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	out := rec.calls
	rec.calls = nil
	slices.SortFunc(out, func(a, b awsCall) int { return strings.Compare(a.String(), b.String()) })
	return slices.Compact(out)
}

// dynamoCalls names a DynamoDB request's action and the partition-key
// prefixes (the first two bytes, such as "E#") of every key it touches:
// what dynamodb:LeadingKeys is checked against. A request that names no
// key (DescribeTable) is on "table".
func dynamoCalls(r *http.Request, body []byte) []awsCall {
	_, op, _ := strings.Cut(r.Header.Get("X-Amz-Target"), ".")
	action := "dynamodb:" + op
	var in struct {
		Key, Item    map[string]map[string]json.RawMessage
		Values       map[string]map[string]json.RawMessage `json:"ExpressionAttributeValues"`
		KeyCondition string                                `json:"KeyConditionExpression"`
		RequestItems map[string]json.RawMessage
	}
	_ = json.Unmarshal(body, &in)
	var pks []map[string]map[string]json.RawMessage
	switch {
	case in.Key != nil:
		pks = append(pks, in.Key)
	case in.Item != nil:
		pks = append(pks, in.Item)
	case in.KeyCondition != "":
		// "#pk = :pk AND ...": the value the partition key is compared to.
		m := regexp.MustCompile(`^\s*\S+\s*=\s*(:\w+)`).FindStringSubmatch(in.KeyCondition)
		if m != nil {
			pks = append(pks, map[string]map[string]json.RawMessage{"pk": in.Values[m[1]]})
		}
	}
	for _, raw := range in.RequestItems {
		var writes []struct {
			PutRequest *struct {
				Item map[string]map[string]json.RawMessage
			}
			DeleteRequest *struct {
				Key map[string]map[string]json.RawMessage
			}
		}
		var gets struct {
			Keys []map[string]map[string]json.RawMessage
		}
		if json.Unmarshal(raw, &writes) == nil {
			for _, w := range writes {
				if w.PutRequest != nil {
					pks = append(pks, w.PutRequest.Item)
				}
				if w.DeleteRequest != nil {
					pks = append(pks, w.DeleteRequest.Key)
				}
			}
		} else if json.Unmarshal(raw, &gets) == nil {
			pks = append(pks, gets.Keys...)
		}
	}
	if len(pks) == 0 {
		return []awsCall{{action, "table"}}
	}
	var calls []awsCall
	for _, k := range pks {
		var pk string
		_ = json.Unmarshal(k["pk"]["S"], &pk)
		calls = append(calls, awsCall{action, pk[:min(2, len(pk))]})
	}
	return calls
}

// s3Calls names an S3 request's action, path-style, and its bucket's role
// (from roles, by the bucket's name) and key.
func s3Calls(roles map[string]string) func(*http.Request, []byte) []awsCall {
	return func(r *http.Request, _ []byte) []awsCall {
		bucket, key, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
		role := roles[bucket]
		if role == "" {
			role = "bucket " + bucket
		}
		q := r.URL.Query()
		var action string
		switch {
		case key == "" && (r.Method == http.MethodGet || r.Method == http.MethodHead):
			action = "s3:ListBucket"
		case r.Method == http.MethodPost && q.Has("delete"):
			action = "s3:DeleteObject"
		case r.Method == http.MethodGet || r.Method == http.MethodHead:
			action = "s3:GetObject"
		case r.Method == http.MethodPut:
			action = "s3:PutObject"
		case r.Method == http.MethodDelete:
			action = "s3:DeleteObject"
		default:
			action = "s3:? " + r.Method
		}
		if key != "" {
			return []awsCall{{action, role + " " + key}}
		}
		return []awsCall{{action, role}}
	}
}

// kinesisCalls names a Kinesis request's action, on "the stream".
func kinesisCalls(r *http.Request, _ []byte) []awsCall {
	_, op, _ := strings.Cut(r.Header.Get("X-Amz-Target"), ".")
	return []awsCall{{"kinesis:" + op, "the stream"}}
}

// apiCalls names the route an HTTP API request invokes, as
// execute-api:Invoke authorizes it ("GET /v1/quarantine").
func apiCalls(r *http.Request, _ []byte) []awsCall {
	return []awsCall{{"execute-api:Invoke", r.Method + " " + r.URL.Path}}
}

// grant is one line of the permissions a command's -h lists: an action
// and the resources it is granted on.
type grant struct {
	Action string
	On     []string // "M#"; "FailedBatches aws/lambda/*"; "FailedBatches"; "the stream"; "POST /v1/events"
}

var (
	sectionLine = regexp.MustCompile(`^  (\S.*):$`)
	grantLine   = regexp.MustCompile(`^    ([a-z0-9-]+:[A-Za-z]+)\s+(.*)$`)
	parenthesis = regexp.MustCompile(`\s*\([^)]*\)`)
	inBucket    = regexp.MustCompile(`^(?:(\S+) in )?the (\S+) bucket$`)
)

// documented reads the permissions out of a command's -h: each section
// ("  replay -dry-run:") and its grants ("    dynamodb:Query   Q# (...), M#").
func documented(t *testing.T, help string) map[string][]grant {
	t.Helper()
	out := map[string][]grant{}
	section := ""
	for _, line := range strings.Split(help, "\n") {
		if m := sectionLine.FindStringSubmatch(line); m != nil {
			section = m[1]
			continue
		}
		m := grantLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		if section == "" {
			t.Fatalf("-h: grant %q outside a section", line)
		}
		g := grant{Action: m[1]}
		for _, on := range strings.Split(parenthesis.ReplaceAllString(m[2], ""), ", ") {
			on = strings.TrimSpace(on)
			if b := inBucket.FindStringSubmatch(on); b != nil {
				on = strings.TrimSpace(b[2] + " " + b[1])
			}
			g.On = append(g.On, on)
		}
		out[section] = append(out[section], g)
	}
	return out
}

// allows reports whether g grants c: the same action on the same key
// prefix, bucket, or bucket and key pattern (a trailing * matches any rest).
func (g grant) allows(c awsCall) bool {
	if g.Action != c.Action {
		return false
	}
	for _, on := range g.On {
		if p, ok := strings.CutSuffix(on, "*"); ok && strings.HasPrefix(c.On, p) || on == c.On {
			return true
		}
	}
	return false
}

// permissionCheck checks the calls a command made against the grants of
// the -h sections that apply to it, and notes each grant it used.
type permissionCheck struct {
	t      *testing.T
	doc    map[string][]grant
	used   map[string]bool // "section\x00action\x00on"
	unused map[string]string
}

// newPermissionCheck reads the permissions of help, which has the
// sections named.
func newPermissionCheck(t *testing.T, help string, sections ...string) *permissionCheck {
	t.Helper()
	doc := documented(t, help)
	for _, s := range sections {
		if len(doc[s]) == 0 {
			t.Fatalf("-h has no permissions section %q; it has %q", s, slices.Sorted(mapKeys(doc)))
		}
	}
	return &permissionCheck{t: t, doc: doc, used: map[string]bool{}}
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// check fails the test for each call that no grant of sections allows:
// an operator who granted what -h lists would get AccessDenied there. No
// sections: the command must have sent nothing.
func (pc *permissionCheck) check(what string, calls []awsCall, sections ...string) {
	pc.t.Helper()
	switch {
	case len(sections) == 0 && len(calls) > 0:
		pc.t.Errorf("%s sent %v; want no AWS request", what, calls)
	case len(sections) > 0 && len(calls) == 0:
		pc.t.Errorf("%s: no AWS request recorded; is the recorder in the way?", what)
	}
	for _, c := range calls {
		allowed := false
		for _, s := range sections {
			for _, g := range pc.doc[s] {
				if g.allows(c) {
					allowed = true
					for _, on := range g.On {
						if (grant{g.Action, []string{on}}).allows(c) {
							pc.used[s+"\x00"+g.Action+"\x00"+on] = true
						}
					}
				}
			}
		}
		if !allowed {
			pc.t.Errorf("%s sent %s, which -h does not list under %q: an operator who follows it gets AccessDenied", what, c, sections)
		}
	}
}

// allUsed fails the test for each grant -h lists that no run used, but
// those in except ("action on"), each with why it was not exercised.
func (pc *permissionCheck) allUsed(except map[string]string) {
	pc.t.Helper()
	for s, gs := range pc.doc {
		for _, g := range gs {
			for _, on := range g.On {
				if pc.used[s+"\x00"+g.Action+"\x00"+on] || except[g.Action+" on "+on] != "" {
					continue
				}
				pc.t.Errorf("-h lists %s on %s under %q, and no run of the command needed it: least privilege lists only what is used", g.Action, on, s)
			}
		}
	}
}

// help is what "shardline args... -h" prints.
func help(t *testing.T, args ...string) string {
	t.Helper()
	var out, errb bytes.Buffer
	if code := run(append(args, "-h"), &out, &errb); code != 0 {
		t.Fatalf("shardline %v -h: code %d, %s", args, code, errb.String())
	}
	return fmt.Sprint(out.String(), errb.String())
}
