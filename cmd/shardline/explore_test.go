package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// Test credentials: set in the environment, found by the SDK's chain.
const (
	testKeyID   = "AKIDEXPLORETEST0001"
	testSecret  = "explore-test-secret-not-a-real-one"
	testToken   = "explore-test-session-token"
	testRegion  = "eu-test-1"
	amzDateForm = "20060102T150405Z"
)

// requireSigV4 is an API that, as API Gateway's IAM authorization does,
// answers 403 unless a request is signed for execute-api in region with
// creds: it signs the request it received again with the SDK's signer and
// compares the signatures. Body and query count: a changed byte fails.
func requireSigV4(t *testing.T, creds aws.Credentials, region string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			t.Errorf("read body: %v", err)
		}
		if msg := checkSignature(r, body, creds, region); msg != "" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusForbidden)
			json.NewEncoder(w).Encode(map[string]string{"message": msg})
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		next.ServeHTTP(w, r)
	})
}

func checkSignature(r *http.Request, body []byte, creds aws.Credentials, region string) string {
	auth := r.Header.Get("Authorization")
	_, signed, ok := strings.Cut(auth, "SignedHeaders=")
	if !ok {
		return "Missing Authentication Token"
	}
	signed, _, _ = strings.Cut(signed, ",")
	at, err := time.Parse(amzDateForm, r.Header.Get("X-Amz-Date"))
	if err != nil || time.Since(at).Abs() > 5*time.Minute {
		return "Signature expired or X-Amz-Date missing"
	}
	again, _ := http.NewRequest(r.Method, "http://"+r.Host+r.URL.RequestURI(), bytes.NewReader(body))
	for _, h := range strings.Split(signed, ";") {
		if h != "host" {
			again.Header[http.CanonicalHeaderKey(h)] = r.Header.Values(h)
		}
	}
	again.Header.Del("Authorization")
	sum := sha256.Sum256(body)
	if err := v4.NewSigner().SignHTTP(context.Background(), creds, again, hex.EncodeToString(sum[:]), "execute-api", region, at); err != nil {
		return "sign: " + err.Error()
	}
	if again.Header.Get("Authorization") != auth {
		return "The request signature we calculated does not match the signature you provided."
	}
	return ""
}

// echo answers what reached it.
type echoed struct {
	Method string              `json:"method"`
	Path   string              `json:"path"`
	Query  map[string][]string `json:"query"`
	Body   []byte              `json:"body"`
}

var echo = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(echoed{r.Method, r.URL.Path, r.URL.Query(), body})
})

// credentialsEnv puts the test credentials where the SDK's default chain
// looks first, and nothing of this machine's AWS configuration in reach.
func credentialsEnv(t *testing.T) {
	dir := t.TempDir()
	for k, v := range map[string]string{
		"AWS_ACCESS_KEY_ID": testKeyID, "AWS_SECRET_ACCESS_KEY": testSecret, "AWS_SESSION_TOKEN": testToken,
		"AWS_CONFIG_FILE": filepath.Join(dir, "config"), "AWS_SHARED_CREDENTIALS_FILE": filepath.Join(dir, "credentials"),
		"AWS_PROFILE": "", "AWS_REGION": "", "AWS_DEFAULT_REGION": "", "AWS_EC2_METADATA_DISABLED": "true",
	} {
		t.Setenv(k, v)
	}
}

// TestExploreSignsForExecuteAPI runs `shardline explore` against a local
// API that requires SigV4: the page is served, and the page's calls reach
// the API signed with the credentials of the SDK's chain, their query
// strings intact; any method but GET and HEAD is refused with 405.
func TestExploreSignsForExecuteAPI(t *testing.T) {
	credentialsEnv(t)
	creds := aws.Credentials{AccessKeyID: testKeyID, SecretAccessKey: testSecret, SessionToken: testToken}
	var reached atomic.Int32
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached.Add(1)
		requireSigV4(t, creds, testRegion, echo).ServeHTTP(w, r)
	}))
	defer api.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	serving := make(chan string, 1)
	done := make(chan error, 1)
	var out bytes.Buffer
	go func() {
		done <- serveExplorer(ctx, exploreOptions{API: api.URL + "/prod", Addr: "127.0.0.1:0", Region: testRegion,
			OnServing: func(u string) { serving <- u }}, &out)
	}()
	var base string
	select {
	case base = <-serving:
	case err := <-done:
		t.Fatalf("explore ended: %v", err)
	}
	if !strings.Contains(out.String(), "EnvConfigCredentials") || !strings.Contains(out.String(), base+"/") {
		t.Errorf("explore printed %q", out.String())
	}

	page, err := http.Get(base + "/")
	if err != nil {
		t.Fatal(err)
	}
	html, _ := io.ReadAll(page.Body)
	page.Body.Close()
	if page.StatusCode != 200 || !strings.Contains(string(html), "shardline explorer") {
		t.Fatalf("GET /: %d", page.StatusCode)
	}

	source := "auth #1 (eu/west) 100% + ü"
	q := url.Values{"source": {source}, "from": {"2026-11-22T10:00:00+01:00"}, "subject": {"a&b=c"}, "limit": {"7"}}
	u := base + "/v1/events?" + q.Encode()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s through the explorer: %d %s", u, resp.StatusCode, raw)
	}
	var got echoed
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	if got.Method != "GET" || got.Path != "/prod/v1/events" || !equalQuery(got.Query, q) || len(got.Body) != 0 {
		t.Errorf("GET %s reached the API as %+v", u, got)
	}
	// The page only reads: nothing else is signed with the operator's
	// credentials, whoever on this machine sends it.
	for _, m := range []string{"POST", "PUT", "DELETE", "PATCH"} {
		req, _ := http.NewRequest(m, u, strings.NewReader(`[{"id":"1"}]`))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "GET, HEAD" {
			t.Errorf("%s through the explorer: %d Allow %q %s; want 405 and Allow: GET, HEAD", m, resp.StatusCode, resp.Header.Get("Allow"), raw)
		}
	}
	if n := reached.Load(); n != 1 {
		t.Errorf("%d requests reached the API; want the GET alone", n)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("explore: %v", err)
	}
}

func equalQuery(a, b map[string][]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if strings.Join(v, "\x00") != strings.Join(b[k], "\x00") {
			return false
		}
	}
	return true
}

// TestTheTestAPIChecksSignatures: the stand-in API of the test above
// refuses what API Gateway refuses: no signature, another secret, another
// region, a body changed after signing.
func TestTheTestAPIChecksSignatures(t *testing.T) {
	creds := aws.Credentials{AccessKeyID: testKeyID, SecretAccessKey: testSecret, SessionToken: testToken}
	api := httptest.NewServer(requireSigV4(t, creds, testRegion, echo))
	defer api.Close()
	send := func(c aws.Credentials, region string, signedBody, sentBody string) int {
		t.Helper()
		req, _ := http.NewRequest("POST", api.URL+"/v1/events?source=s", strings.NewReader(sentBody))
		if region != "" {
			sum := sha256.Sum256([]byte(signedBody))
			if err := v4.NewSigner().SignHTTP(context.Background(), c, req, hex.EncodeToString(sum[:]), "execute-api", region, time.Now()); err != nil {
				t.Fatal(err)
			}
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	wrong := creds
	wrong.SecretAccessKey = "another-secret"
	for name, got := range map[string]int{
		"signed":         send(creds, testRegion, "{}", "{}"),
		"unsigned":       send(creds, "", "{}", "{}"),
		"another secret": send(wrong, testRegion, "{}", "{}"),
		"another region": send(creds, "us-test-2", "{}", "{}"),
		"changed body":   send(creds, testRegion, "{}", "{ }"),
	} {
		if want := map[bool]int{true: 200, false: 403}[name == "signed"]; got != want {
			t.Errorf("%s: %d, want %d", name, got, want)
		}
	}
}

// TestExploreRefuses: no -api, an API over plain http elsewhere, an
// address that is not loopback.
func TestExploreRefuses(t *testing.T) {
	credentialsEnv(t)
	for _, c := range []struct {
		args []string
		err  string
	}{
		{[]string{"explore"}, "-api is required"},
		{[]string{"explore", "-api", "http://api.example.com"}, "want https"},
		{[]string{"explore", "-api", "https://x.execute-api.eu-west-1.amazonaws.com", "-addr", "0.0.0.0:8080"}, "loopback"},
		{[]string{"explore", "-api", "https://api.example.com"}, "no region"},
	} {
		var out, errb bytes.Buffer
		if code := run(c.args, &out, &errb); code != 1 || !strings.Contains(errb.String(), c.err) {
			t.Errorf("shardline %v: %d %q", c.args, code, errb.String())
		}
	}
	for host, want := range map[string]string{"abc.execute-api.eu-west-1.amazonaws.com": "eu-west-1", "api.example.com": ""} {
		if got := regionOf(host); got != want {
			t.Errorf("regionOf(%q) = %q", host, got)
		}
	}
}
