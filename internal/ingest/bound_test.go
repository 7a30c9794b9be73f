package ingest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

// lambdaResponseLimit is Lambda's limit on a synchronous invocation's
// response payload: the APIGatewayV2HTTPResponse as JSON, body escaped
// into it as a string.
const lambdaResponseLimit = 6 << 20

// payloadLen is the size Lambda counts of resp.
func payloadLen(t testing.TB, resp events.APIGatewayV2HTTPResponse) int {
	t.Helper()
	b, err := json.Marshal(resp)
	if err != nil {
		t.Fatal(err)
	}
	return len(b)
}

// jsonText is s as a JSON string with <, > and & as they are, as a
// producer's encoder may well send them (one byte each in the request).
func jsonText(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return strings.TrimSuffix(b.String(), "\n")
}

// TestIssue28ErrorAnswerFitsLambda is the issue's input, as large as
// Lambda takes it in: 20 invalid events of about 50 KB, each with a time of
// 50,000 '<' (the issue's 60,000 make a body of 7.2 MB in Lambda's
// invocation payload, a '<' 6 bytes there: API Gateway or the function
// refuses it with a 413, TestPayloadLimit). Each '<' the answer echoed
// took 7 bytes of the payload: 7 MB, over Lambda's limit.
func TestIssue28ErrorAnswerFitsLambda(t *testing.T) {
	e := newEnv(t, false, func(c *Config) { c.MaxEventBytes = 65 << 10 })
	var evs []string
	for i := range 20 {
		evs = append(evs, fmt.Sprintf(`{"id":"lt-%d","source":"s","type":"t","time":%s}`, i, jsonText(strings.Repeat("<", 50000))))
	}
	resp, err := e.h.HTTP(context.Background(), post("["+strings.Join(evs, ",")+"]", "application/cloudevents-batch+json"))
	if err != nil || resp.StatusCode != 400 {
		t.Fatalf("%v %d %.300s", err, resp.StatusCode, resp.Body)
	}
	n := payloadLen(t, resp)
	t.Logf("answer: %d bytes of payload for a body of %d bytes", n, len(strings.Join(evs, ",")))
	if n >= lambdaResponseLimit/100 {
		t.Fatalf("a %d-byte payload; want it far under Lambda's %d", n, lambdaResponseLimit)
	}
	r := decodeResponse(t, resp.Body)
	if len(r.Rejected) != 20 || r.ReasonsOmitted != 0 || r.Rejected[7].ID != "lt-7" ||
		!strings.Contains(r.Rejected[7].Error, `time: "<<<`) || !strings.Contains(r.Rejected[7].Error, "(the first 64 of 50000 bytes)") {
		t.Fatalf("rejections %.600s", resp.Body)
	}
}

// TestHugeRejectedListKeepsEveryIndex: 1,000 events each refused for an id
// of 800 '<' (4.8 MB in Lambda's invocation payload, under its limit). Every one is listed by index; those past
// RejectedDetailBytes without id and reason, and reasons_omitted counts
// them.
func TestHugeRejectedListKeepsEveryIndex(t *testing.T) {
	e := newEnv(t, false, nil)
	ev := fmt.Sprintf(`{"id":%s,"source":"s","type":"t"}`, jsonText(strings.Repeat("<", 800)))
	body := "[" + strings.Repeat(ev+",", MaxRequestEvents-1) + ev + "]"
	resp, err := e.h.HTTP(context.Background(), post(body, "application/json"))
	if err != nil || resp.StatusCode != 400 {
		t.Fatalf("%v %d %.300s", err, resp.StatusCode, resp.Body)
	}
	n := payloadLen(t, resp)
	r := decodeResponse(t, resp.Body)
	t.Logf("answer: %d bytes of payload, %d reasons omitted", n, r.ReasonsOmitted)
	if n >= lambdaResponseLimit/4 {
		t.Fatalf("a %d-byte payload", n)
	}
	if len(r.Rejected) != MaxRequestEvents || r.ReasonsOmitted == 0 || r.ReasonsOmitted == MaxRequestEvents {
		t.Fatalf("%d rejected, %d without reason", len(r.Rejected), r.ReasonsOmitted)
	}
	first := r.Rejected[0]
	if !strings.HasPrefix(first.ID, strings.Repeat("<", 256)+"… (the first 256 of 800 bytes)") || !strings.HasPrefix(first.Error, "id: is 800 bytes") {
		t.Fatalf("first rejection %.400q", first.ID+" "+first.Error)
	}
	omitted := 0
	for i, rj := range r.Rejected {
		if rj.Index != i {
			t.Fatalf("rejection %d has index %d", i, rj.Index)
		}
		if rj.Error == omittedReason {
			omitted++
		}
	}
	if omitted != r.ReasonsOmitted || r.Rejected[len(r.Rejected)-1].Error != omittedReason {
		t.Fatalf("%d listed without reason, reasons_omitted %d", omitted, r.ReasonsOmitted)
	}
}

// TestEmptyBatchIsAccepted: an empty CloudEvents batch is valid (JSON
// format 1.0.2): 202, nothing accepted. An empty plain JSON array stays a
// 400 (TestHTTPAnswers).
func TestEmptyBatchIsAccepted(t *testing.T) {
	e := newEnv(t, false, nil)
	resp, err := e.h.HTTP(context.Background(), post(" [ ] ", "application/cloudevents-batch+json"))
	if err != nil || resp.StatusCode != 202 {
		t.Fatalf("%v %d %s", err, resp.StatusCode, resp.Body)
	}
	if r := decodeResponse(t, resp.Body); r.Accepted != 0 || r.Rejected == nil || len(r.Rejected) != 0 || r.Error != "" {
		t.Fatalf("body %s", resp.Body)
	}
	if n := len(e.scan(t)); n != 0 {
		t.Fatalf("%d items written for an empty batch", n)
	}
}

// TestLongSubjectRefusedAtIngest: a subject over 256 bytes, which the
// query's subject filter cannot ask for, is refused like any invalid event
// (and quarantined), in structured and in binary mode.
func TestLongSubjectRefusedAtIngest(t *testing.T) {
	e := newEnv(t, false, nil)
	long := strings.Repeat("ß", 150) // 300 bytes
	at := fixtureNow.Add(-time.Minute).Format(time.RFC3339)
	resp, _ := e.h.HTTP(context.Background(), post(`{"id":"1","source":"s","type":"t","time":"`+at+`","subject":"`+long+`"}`, "application/json"))
	if r := decodeResponse(t, resp.Body); resp.StatusCode != 400 || len(r.Rejected) != 1 || r.Rejected[0].Error != "subject: is 300 bytes; the limit is 256" {
		t.Fatalf("structured: %d %s", resp.StatusCode, resp.Body)
	}
	resp, _ = e.h.HTTP(context.Background(), binaryPost(`{}`, "application/json",
		map[string]string{"specversion": "1.0", "id": "2", "source": "s", "type": "t", "time": at, "subject": long}))
	if r := decodeResponse(t, resp.Body); resp.StatusCode != 400 || len(r.Rejected) != 1 || !strings.HasPrefix(r.Rejected[0].Error, "ce-subject: is 300 bytes") {
		t.Fatalf("binary: %d %s", resp.StatusCode, resp.Body)
	}
	if n, q := len(e.itemsIn(t, "E#")), len(e.itemsIn(t, "Q#")); n != 0 || q != 2 {
		t.Fatalf("%d stored, %d quarantined; want 0 and 2", n, q)
	}
	resp, _ = e.h.HTTP(context.Background(), post(`{"id":"3","source":"s","type":"t","time":"`+at+`","subject":"`+long[:256]+`"}`, "application/json"))
	if resp.StatusCode != 202 {
		t.Fatalf("a 256-byte subject: %d %s", resp.StatusCode, resp.Body)
	}
}

// nastyAlphabets are characters that JSON escaping grows the most, twice
// over in the Lambda payload: '<' to 7 bytes, '"' and '\' to 4 in the body
// and more in a %q, control characters to 7, U+2028 from 3 to 7.
var nastyAlphabets = [][]string{{"<"}, {"\""}, {"\\"}, {"\x01", "\x1f"}, {"\u0080"}, {"\u2028"}, {"<", ">", "&", "\"", "\\", "\x00", "é", "😀", "a"}}

// nasty is about n bytes drawn from one of nastyAlphabets.
func nasty(r *rand.Rand, n int) string {
	alpha := nastyAlphabets[r.IntN(len(nastyAlphabets))]
	var b strings.Builder
	b.Grow(n + 4) // the last character may take 4 bytes past n
	for b.Len() < n {
		b.WriteString(alpha[r.IntN(len(alpha))])
	}
	return b.String()
}

func jsonDecode(s string, v any) error { return json.Unmarshal([]byte(s), v) }
