package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// signedAPI answers the API's routes with canned bodies and checks, with
// the SDK's signer, each request's SigV4 signature for execute-api in
// eu-west-1 with the test's static credentials.
type signedAPI struct {
	mu       sync.Mutex
	signed   int
	unsigned int
	errs     []error
}

func (s *signedAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	if r.Header.Get("Authorization") == "" {
		s.unsigned++
	} else if err := verifySigV4(r, body); err != nil {
		s.errs = append(s.errs, fmt.Errorf("%s %s: %w", r.Method, r.URL, err))
	} else {
		s.signed++
	}
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	switch r.Method + " " + r.URL.Path {
	case "POST /v1/events":
		w.WriteHeader(http.StatusAccepted)
		fmt.Fprint(w, `{"accepted":2,"rejected":[]}`)
	case "GET /v1/events":
		fmt.Fprint(w, `{"events":[{"specversion":"1.0","id":"a","source":"s","type":"t","time":"2026-11-22T10:00:00Z"}],"plan":{"path":"gsi","reason":"r","requests":1,"consumed_rcu":0.5}}`)
	case "GET /v1/counts":
		fmt.Fprint(w, `{"interval":"1h","from":"2026-11-22T10:00:00Z","to":"2026-11-22T12:00:00Z","series":[{"type":"t","points":[{"t":"2026-11-22T10:00:00Z","count":3},{"t":"2026-11-22T11:00:00Z","count":0}]}],"plan":{"requests":1,"consumed_rcu":0.5}}`)
	default:
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, `{"message":"Not Found"}`)
	}
}

// verifySigV4 signs again, with the SDK's signer, what the server received
// of a signed request (its signed headers, body and date) and compares.
func verifySigV4(r *http.Request, body []byte) error {
	auth := r.Header.Get("Authorization")
	if !regexp.MustCompile(`^AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/\d{8}/eu-west-1/execute-api/aws4_request, SignedHeaders=\S+, Signature=[0-9a-f]{64}$`).MatchString(auth) {
		return fmt.Errorf("Authorization %q", auth)
	}
	m := regexp.MustCompile(`SignedHeaders=([^,]+)`).FindStringSubmatch(auth)
	at, err := time.Parse("20060102T150405Z", r.Header.Get("X-Amz-Date"))
	if err != nil {
		return err
	}
	req, _ := http.NewRequest(r.Method, "http://"+r.Host+r.URL.RequestURI(), strings.NewReader(string(body)))
	for _, name := range strings.Split(m[1], ";") {
		if name != "host" && name != "x-amz-date" && name != "x-amz-security-token" {
			req.Header.Set(name, r.Header.Get(name))
		}
	}
	creds := aws.Credentials{AccessKeyID: "AKIDEXAMPLE", SecretAccessKey: "secret", SessionToken: r.Header.Get("X-Amz-Security-Token")}
	hash := sha256hex(body)
	if err := v4.NewSigner().SignHTTP(context.Background(), creds, req, hash, "execute-api", "eu-west-1", at); err != nil {
		return err
	}
	if got := req.Header.Get("Authorization"); got != auth {
		return fmt.Errorf("signature does not verify:\n got  %s\n want %s", auth, got)
	}
	return nil
}

// TestCommandsSign: every API command signs with SigV4 from the SDK's
// default chain (here static credentials in the environment) when told to
// (-sign always; auto does for any host not on this machine), and sends
// plain HTTP to this machine with -sign auto.
func TestCommandsSign(t *testing.T) {
	localEnv(t)
	api := &signedAPI{}
	srv := httptest.NewServer(api)
	defer srv.Close()
	for k, v := range map[string]string{"AWS_ACCESS_KEY_ID": "AKIDEXAMPLE", "AWS_SECRET_ACCESS_KEY": "secret", "AWS_SESSION_TOKEN": "token", "AWS_REGION": "eu-west-1"} {
		t.Setenv(k, v)
	}
	events := writeFile(t, "e.ndjson", event("s", "a", "t", time.Now()), event("s", "b", "t", time.Now()))
	commands := [][]string{
		{"send", "-api", srv.URL, events},
		{"query", "-api", srv.URL, "-source", "s"},
		{"tail", "-api", srv.URL, "-source", "s"},
		{"counts", "-api", srv.URL, "-source", "s"},
	}
	for _, sign := range []string{"always", "auto"} {
		for _, args := range commands {
			args = append(args[:1:1], append([]string{"-sign", sign}, args[1:]...)...)
			if code, out, errs := sh(args...); code != 0 || out == "" {
				t.Fatalf("shardline %v: code %d\nout %s\nerr %s", args, code, out, errs)
			}
		}
	}
	if len(api.errs) > 0 || api.signed != 4 || api.unsigned != 4 {
		t.Fatalf("%d signed, %d unsigned; errors %v", api.signed, api.unsigned, api.errs)
	}

	// Without a region, or with a bad -sign, the command says what to do.
	t.Setenv("AWS_REGION", "")
	if code, _, errs := sh("query", "-api", srv.URL, "-source", "s", "-sign", "always"); code != 1 || !strings.Contains(errs, "needs a region: set AWS_REGION") {
		t.Fatalf("no region: code %d, err %s", code, errs)
	}
	if code, _, errs := sh("query", "-api", srv.URL, "-source", "s", "-sign", "maybe"); code != 1 || !strings.Contains(errs, `-sign "maybe": want auto, always or never`) {
		t.Fatalf("bad -sign: code %d, err %s", code, errs)
	}
	t.Setenv("AWS_ACCESS_KEY_ID", "")
	t.Setenv("AWS_REGION", "eu-west-1")
	if code, _, errs := sh("counts", "-api", srv.URL, "-source", "s", "-sign", "always"); code != 1 || !strings.Contains(errs, "needs AWS credentials") {
		t.Fatalf("no credentials: code %d, err %s", code, errs)
	}
}

// TestShouldSign: auto signs for every host but this machine's.
func TestShouldSign(t *testing.T) {
	for _, c := range []struct {
		url, mode string
		sign      bool
	}{
		{"https://abc123.execute-api.eu-west-1.amazonaws.com", "auto", true},
		{"https://events.example.com/prod", "auto", true},
		{"http://127.0.0.1:8080", "auto", false},
		{"http://127.0.0.2:8080", "auto", false},
		{"http://localhost:8080", "auto", false},
		{"http://[::1]:8080", "auto", false},
		{"http://127.0.0.1:8080", "always", true},
		{"https://abc123.execute-api.eu-west-1.amazonaws.com", "never", false},
	} {
		u, _ := url.Parse(c.url)
		if got, err := shouldSign(u, c.mode); err != nil || got != c.sign {
			t.Errorf("shouldSign(%s, %s) = %v, %v", c.url, c.mode, got, err)
		}
	}
	if r := regionOf("abc123.execute-api.eu-west-1.amazonaws.com"); r != "eu-west-1" {
		t.Errorf("regionOf: %q", r)
	}
	if r := regionOf("events.example.com"); r != "" {
		t.Errorf("regionOf a custom domain: %q", r)
	}
}

func sha256hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
