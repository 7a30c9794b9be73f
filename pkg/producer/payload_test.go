package producer_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/shardline/shardline/internal/ingest"
	"github.com/shardline/shardline/local/httpapi"
	"github.com/shardline/shardline/pkg/producer"
)

// markup is event data that JSON escapes when API Gateway puts the body in
// Lambda's event: quotes (\" in the body, \\\" in the event) and < and >
// (\u003c), among plain text: log lines and HTML fragments as producers
// send them.
func markup(i int) map[string]any {
	line := `GET /cart?id=88812 200 "checkout-web/2.4" <div class="total">42.10</div> served in 12 ms from eu-west-1, cache miss; `
	return map[string]any{
		"specversion": "1.0", "source": "test/payload", "type": "log.line",
		"id": fmt.Sprintf("p-%05d", i), "time": time.Now().UTC().Add(-time.Minute).Format(time.RFC3339),
		"data": map[string]any{"lines": strings.Repeat(line, 44)},
	}
}

// TestHTTPLambdaPayload: 1,000 events of 5.5 KB of JSON (a 5.5 MB body,
// under the 6 MiB of bytes) take more than Lambda's 6,291,456-byte
// invocation payload once escaped into API Gateway's event. Send splits
// them into requests Lambda can take, and the real ingest handler, behind
// local/httpapi (which answers 413 for an event over Lambda's limit, as API
// Gateway does), stores every one. A body Lambda could carry but over the
// ingest's MaxPayloadBytes gets the function's own 413, naming the limit;
// and an event that no request can carry is rejected unsent.
func TestHTTPLambdaPayload(t *testing.T) {
	t.Parallel() // its own server and table
	base := serve(t)
	evs := make([]any, 1000)
	raw, escaped := 2, 0
	for i := range evs {
		evs[i] = markup(i)
		raw += len(asSent(t, evs[i])) + 1
	}
	body := asSent(t, evs)
	escaped = len(mustJSON(t, string(body)))
	t.Logf("1,000 events: a %d-byte body, %d bytes as a JSON string in Lambda's event", raw, escaped)
	if raw >= producer.MaxRequestBytes || escaped <= httpapi.MaxInvokeBytes {
		t.Fatalf("the body must fit %d bytes and its JSON string not fit Lambda's %d", producer.MaxRequestBytes, httpapi.MaxInvokeBytes)
	}

	res, err := producer.NewHTTP(base).Send(context.Background(), evs...)
	if err != nil || res.Accepted != 1000 || len(res.Rejected) != 0 || len(res.Failed) != 0 || res.Requests != 2 {
		t.Fatalf("Send: accepted %d, rejected %d, failed %d, in %d requests; %v (want 1,000 accepted in 2 requests)",
			res.Accepted, len(res.Rejected), len(res.Failed), res.Requests, err)
	}

	// The whole body in one request: over Lambda's limit, so API Gateway's
	// 413, and the function is not invoked.
	status, answer := post(t, base, body)
	if status != http.StatusRequestEntityTooLarge || answer["message"] != "Request Entity Too Large" {
		t.Fatalf("a %d-byte event: %d %v, want API Gateway's 413", escaped, status, answer)
	}

	// 100 events of plain JSON, 1,000 bytes over MaxPayloadBytes: Lambda
	// carries it, and the function refuses it whole, naming its limit.
	plain := make([]map[string]any, 100)
	for i := range plain {
		plain[i] = ev(10000+i, 0)
	}
	b, _ := json.Marshal(plain)
	pad := (ingest.MaxPayloadBytes + 1000 - len(b) - 2) / len(plain)
	for i := range plain {
		plain[i] = ev(10000+i, pad)
	}
	b, _ = json.Marshal(plain)
	status, answer = post(t, base, b)
	msg, _ := answer["error"].(string)
	if status != http.StatusRequestEntityTooLarge || !strings.HasPrefix(msg, "body: ") || !strings.Contains(msg, fmt.Sprint(ingest.MaxPayloadBytes)) {
		t.Fatalf("a %d-byte body of plain JSON: %d %v, want the function's 413 naming %d", len(b), status, answer, ingest.MaxPayloadBytes)
	}

	// One event no request can carry: rejected unsent, with the reason.
	huge := ev(20000, 0)
	huge["data"] = strings.Repeat(`"`, producer.MaxPayloadBytes/4)
	res, err = producer.NewHTTP(base).Send(context.Background(), huge, ev(20001, 1))
	if err != nil || res.Accepted != 1 || res.Requests != 1 || len(res.Rejected) != 1 || res.Rejected[0].Index != 0 ||
		!strings.Contains(res.Rejected[0].Error, fmt.Sprint(producer.MaxPayloadBytes)) {
		t.Fatalf("an event of %d quotes: %+v, %v; want it rejected unsent, naming %d", producer.MaxPayloadBytes/4, res, err, producer.MaxPayloadBytes)
	}
}

// asSent is v's JSON as the producer writes it: < stays <.
func asSent(t *testing.T, v any) []byte {
	t.Helper()
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return []byte(strings.TrimSuffix(b.String(), "\n"))
}

// mustJSON is v as encoding/json writes it, as API Gateway's event carries
// a body: < as \u003c.
func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// post sends body to POST /v1/events as it is and returns the answer.
func post(t *testing.T, base string, body []byte) (int, map[string]any) {
	t.Helper()
	resp, err := http.Post(base+"/v1/events", "application/json", strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var answer map[string]any
	if err := json.Unmarshal(b, &answer); err != nil {
		t.Fatalf("answer %d %q: %v", resp.StatusCode, b, err)
	}
	return resp.StatusCode, answer
}
