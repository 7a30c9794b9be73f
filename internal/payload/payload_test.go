package payload

import (
	"encoding/base64"
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
)

// TestBodyIsEncodingJSON: a UTF-8 body's size is the length of the JSON
// string encoding/json makes of it, whatever its characters, and adding it
// in parts gives the same.
func TestBodyIsEncodingJSON(t *testing.T) {
	var ascii strings.Builder
	for c := range 128 {
		ascii.WriteByte(byte(c))
	}
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []string{"x", `"`, `\`, "<", ">", "&", "\n", "\x01", "\x7f", "é", "€", "😀", "\u2028", "\u2029", " "}
	bodies := []string{"", ascii.String(), `[{"id":"a","data":"<b>\"q\"</b>"}]`}
	for range 200 {
		var b strings.Builder
		for range rng.IntN(300) {
			b.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		bodies = append(bodies, b.String())
	}
	for _, body := range bodies {
		want, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		if got := Body([]byte(body)); got != len(want) {
			t.Fatalf("Body(%q) = %d, encoding/json makes %d bytes: %s", body, got, len(want), want)
		}
		var s Size
		for rest := body; rest != ""; {
			cut := strings.IndexByte(rest[1:], '"') + 1 // an ASCII character: a whole character boundary
			if cut <= 0 {
				cut = len(rest)
			}
			s, rest = s.AddString(rest[:cut]), rest[cut:]
		}
		if s.Bytes() != len(want) {
			t.Fatalf("%q in parts: %d bytes, want %d", body, s.Bytes(), len(want))
		}
	}
}

// TestBodyNotUTF8: a body that is not UTF-8 is what its base64 takes as a
// JSON string, as API Gateway sends it (isBase64Encoded).
func TestBodyNotUTF8(t *testing.T) {
	for _, body := range [][]byte{{0xff}, []byte("ab\xc3"), append([]byte(strings.Repeat("<", 100)), 0xfe, 'x')} {
		want, _ := json.Marshal(base64.StdEncoding.EncodeToString(body))
		if got := Body(body); got != len(want) {
			t.Errorf("Body(%q) = %d, want %d", body, got, len(want))
		}
		if s := (Size{}).AddString("[").Add(body).AddString("]"); s.Bytes() != Base64(len(body)+2) {
			t.Errorf("%q in parts: %d, want %d", body, s.Bytes(), Base64(len(body)+2))
		}
	}
}

// TestEnvelopeFits: the rest of an event, with as many header bytes as
// API Gateway lets through and an IAM caller, takes less than
// EnvelopeBytes, for an HTTP API (v2) event and a REST (v1) one, which
// carries its headers twice.
func TestEnvelopeFits(t *testing.T) {
	headers := map[string]string{}
	for i := 0; i < 10; i++ { // 10 headers of 1,000 bytes: about API Gateway's 10,240
		headers["x-h"+strings.Repeat("x", i)] = strings.Repeat("v", 1000)
	}
	var v2 events.APIGatewayV2HTTPRequest
	read(t, "api-ingest-v2.json", &v2)
	v2.Headers, v2.Body = headers, ""
	v2.RequestContext.Authorizer = &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{IAM: &events.APIGatewayV2HTTPRequestContextAuthorizerIAMDescription{
		AccessKey: strings.Repeat("A", 20), AccountID: "000000000000", CallerID: strings.Repeat("C", 60),
		PrincipalOrgID: "o-" + strings.Repeat("x", 30), UserARN: "arn:aws:sts::000000000000:assumed-role/" + strings.Repeat("r", 64) + "/" + strings.Repeat("s", 64),
		UserID: strings.Repeat("U", 60) + ":" + strings.Repeat("s", 64),
	}}
	var v1 events.APIGatewayProxyRequest
	read(t, "rest-ingest-v1.json", &v1)
	v1.Headers, v1.MultiValueHeaders, v1.Body = headers, map[string][]string{}, ""
	for k, v := range headers {
		v1.MultiValueHeaders[k] = []string{v}
	}
	v1.RequestContext.Identity.UserArn, v1.RequestContext.Identity.User = v2.RequestContext.Authorizer.IAM.UserARN, v2.RequestContext.Authorizer.IAM.UserID
	for name, ev := range map[string]any{"v2": v2, "v1": v1} {
		b, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		if len(b) >= EnvelopeBytes {
			t.Errorf("%s: the event without its body is %d bytes, not under the %d kept for it", name, len(b), EnvelopeBytes)
		}
		t.Logf("%s: %d bytes besides the body", name, len(b))
	}
}

func read(t *testing.T, name string, v any) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "events", name))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatal(err)
	}
}
