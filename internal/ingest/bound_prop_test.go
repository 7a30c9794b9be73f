package ingest

import (
	"context"
	"encoding/base64"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/shardline/shardline/internal/payload"
)

// hostile is a request built to hit an error path, and what its answer
// must say of it.
type hostile struct {
	what    string
	req     events.APIGatewayV2HTTPRequest
	events  int          // the events the body holds as the API reads it; 0 for a request refused whole
	invalid map[int]bool // the indexes that must be rejected
	// unchecked: the request cannot be rebuilt as an HTTP request (its
	// method is not a token), so openapitest cannot check the exchange.
	unchecked bool
}

// TestEveryErrorAnswerFitsLambda is the acceptance: whatever the
// input, no answer of POST /v1/events passes Lambda's 6 MB response
// payload, and every answer still names each rejected event (by index) and
// says how many were listed without their reason. 300 seeded cases: event
// arrays with huge and escape-heavy ids, times, specversions, media types,
// subjects, member names; binary mode with bad headers; bad JSON; requests
// refused whole (route, method, media type, size, base64).
func TestEveryErrorAnswerFitsLambda(t *testing.T) {
	e := newEnv(t, false, nil)
	most, mostWhat := 0, ""
	for i := range 300 {
		r := rand.New(rand.NewPCG(28, uint64(i)))
		var c hostile
		switch k := i % 6; {
		case k < 3:
			c = hostileEvents(r, i)
		case k == 3:
			c = hostileBinary(r)
		case k == 4:
			c = hostileJSON(r)
		default:
			c = hostileRequest(r)
		}
		if c.events > 0 && payload.Body(c.req.Body) > MaxPayloadBytes {
			// Lambda's invocation payload could not carry it: refused whole.
			c.what, c.events, c.invalid = c.what+", over Lambda's payload", 0, nil
		}
		serve := e.h.HTTP
		if c.unchecked {
			serve = e.h.Handler.HTTP
		}
		resp, err := serve(context.Background(), c.req)
		if err != nil {
			t.Fatalf("case %d (%s): %v", i, c.what, err)
		}
		n := payloadLen(t, resp)
		if n > most {
			most, mostWhat = n, fmt.Sprintf("case %d (%s, status %d)", i, c.what, resp.StatusCode)
		}
		if n >= lambdaResponseLimit {
			t.Fatalf("case %d (%s): a %d-byte payload, over Lambda's %d", i, c.what, n, lambdaResponseLimit)
		}
		checkNamesRejected(t, fmt.Sprintf("case %d (%s)", i, c.what), c, resp)
	}
	t.Logf("largest payload: %d bytes, %s", most, mostWhat)
}

// checkNamesRejected checks that resp lists exactly c's invalid events, each
// once, and counts those listed without a reason.
func checkNamesRejected(t *testing.T, name string, c hostile, resp events.APIGatewayV2HTTPResponse) {
	t.Helper()
	if c.events == 0 {
		var body struct{ Error string }
		if resp.StatusCode < 400 || resp.StatusCode >= 500 || jsonDecode(resp.Body, &body) != nil || body.Error == "" {
			t.Fatalf("%s: %d %.300s", name, resp.StatusCode, resp.Body)
		}
		return
	}
	r := decodeResponse(t, resp.Body)
	want := 202
	if len(c.invalid) == c.events {
		want = 400
	}
	if resp.StatusCode != want || r.Accepted+len(r.Rejected) != c.events {
		t.Fatalf("%s: %d, %d accepted and %d rejected of %d events: %.300s", name, resp.StatusCode, r.Accepted, len(r.Rejected), c.events, resp.Body)
	}
	seen, omitted := map[int]bool{}, 0
	for _, rj := range r.Rejected {
		if !c.invalid[rj.Index] || seen[rj.Index] {
			t.Fatalf("%s: rejection of event %d, which is valid or listed twice", name, rj.Index)
		}
		seen[rj.Index] = true
		switch {
		case rj.Error == omittedReason:
			omitted++
		case !strings.Contains(rj.Error, ": "):
			t.Fatalf("%s: rejection %.200q names no field", name, rj.Error)
		}
	}
	if len(seen) != len(c.invalid) || omitted != r.ReasonsOmitted {
		t.Fatalf("%s: %d of %d invalid events listed, %d without reason, reasons_omitted %d", name, len(seen), len(c.invalid), omitted, r.ReasonsOmitted)
	}
}

// eventCount draws how many events an array holds: mostly a few, at times
// up to the 1,000 a request may hold.
func eventCount(r *rand.Rand) int {
	switch p := r.IntN(20); {
	case p < 12:
		return 1 + r.IntN(5)
	case p < 17:
		return 6 + r.IntN(45)
	case p < 19:
		return 51 + r.IntN(250)
	}
	return 301 + r.IntN(MaxRequestEvents-300)
}

// hostileEvents is an array of events, some valid, each invalid one with
// one hostile fault, the whole within MaxPayloadBytes in Lambda's payload.
func hostileEvents(r *rand.Rand, seq int) hostile {
	n := eventCount(r)
	// The bytes of nasty text an event may hold: escaping grows each up to 6
	// times, and its id takes up to 1,500.
	budget := ((MaxPayloadBytes-4096)/n - 2000) / 7
	c := hostile{what: fmt.Sprintf("%d events", n), events: n, invalid: map[int]bool{}}
	validShare := r.IntN(3) // none, a third, two thirds
	evs := make([]string, n)
	for i := range evs {
		size := min([]int{300, 5000, 70000}[r.IntN(3)], budget)
		if r.IntN(3) < validShare {
			evs[i] = fmt.Sprintf(`{"id":"v-%d-%d","source":"prop","type":"t","time":"%s","subject":%s}`,
				seq, i, fixtureNow.Add(-time.Minute).Format(time.RFC3339), jsonText(nasty(r, 200)))
			continue
		}
		c.invalid[i] = true
		evs[i] = invalidEvent(r, size)
	}
	ct := []string{"application/json", "application/cloudevents-batch+json"}[r.IntN(2)]
	c.req = post("["+strings.Join(evs, ",")+"]", ct)
	return c
}

// invalidEvent is an event with one hostile fault, of about size bytes
// before escaping (size is at least 300).
func invalidEvent(r *rand.Rand, size int) string {
	id := jsonText(nasty(r, min(size, 250)))
	big := nasty(r, size)
	base := `"source":"s","type":"t"`
	switch r.IntN(12) {
	case 0:
		return `{"id":` + jsonText(big) + `,` + base + `}`
	case 1:
		return `{"id":` + id + `,` + base + `,"time":` + jsonText(big) + `}`
	case 2:
		return `{"id":` + id + `,` + base + `,"specversion":` + jsonText(big) + `}`
	case 3:
		return `{"id":` + id + `,` + base + `,"datacontenttype":` + jsonText(big) + `}`
	case 4:
		return `{"id":` + id + `,` + base + `,"subject":` + jsonText(big+strings.Repeat("x", 257)) + `}`
	case 5:
		return `{"id":` + id + `,` + base + `,"subject":""}`
	case 6:
		return `{"id":` + id + `,` + base + `,"` + strings.Repeat("A", size) + `":1}`
	case 7:
		return `{"id":` + id + `,` + base + `,` + jsonText("X"+big) + `:1}`
	case 8:
		return jsonText(big)
	case 9:
		return `{"id":` + id + `,"source":"s","type":` + jsonText(big+strings.Repeat("t", 257)) + `}`
	case 10:
		return `{"id":` + id + `,` + base + `,"id":` + id + `}`
	}
	return `{"id":"\ud800` + strings.Repeat("x", size) + `",` + base + `}`
}

// hostileBinary is one event in binary mode with a bad header or body.
func hostileBinary(r *rand.Rand) hostile {
	big := nasty(r, []int{300, 60000, 1 << 20}[r.IntN(3)])
	ce := map[string]string{"specversion": "1.0", "id": "b-1", "source": "s", "type": "t"}
	body, ct := `{"ok":true}`, "application/json"
	switch r.IntN(7) {
	case 0:
		ce["id"] = big
	case 1:
		ce["time"] = big
	case 2:
		ce["specversion"] = big
	case 3:
		ce[strings.Repeat("x", len(big))] = "%zz"
	case 4:
		ce["subject"] = big + "%ff"
	case 5:
		ce["subject"] = big + strings.Repeat("s", 257)
	default:
		body = "{" + big
	}
	c := hostile{what: "binary mode", events: 1, invalid: map[int]bool{0: true}}
	c.req = binaryPost(body, ct, ce)
	return c
}

// hostileJSON is a body that is not JSON, or not UTF-8, refused whole.
func hostileJSON(r *rand.Rand) hostile {
	big := nasty(r, []int{300, 60000, 3 << 20}[r.IntN(3)])
	body := []string{"{" + big, "[" + big, big, `{"id":"` + big, "[{}," + big + "]", "\xff" + big}[r.IntN(6)]
	c := hostile{what: "bad JSON", events: 1, invalid: map[int]bool{0: true}}
	c.req = post(body, "application/json")
	return c
}

// hostileRequest is a request refused whole, before any event is read.
func hostileRequest(r *rand.Rand) hostile {
	big := nasty(r, []int{300, 60000, 1 << 20}[r.IntN(3)])
	good := `{"id":"1","source":"s","type":"t"}`
	req := post(good, "application/json")
	c := hostile{what: "refused whole"}
	switch r.IntN(6) {
	case 0:
		req.RawPath = "/" + big
	case 1:
		req.RequestContext.HTTP.Method, c.unchecked = big, true
	case 2:
		req.Headers["content-type"] = big
	case 3:
		req.Headers["content-type"] = "application/x-" + strings.Repeat("y", len(big))
	case 4:
		req.Body = "[" + strings.Repeat(good+",", MaxRequestEvents) + good + "]"
	default:
		req.Body, req.IsBase64Encoded = base64.StdEncoding.EncodeToString([]byte(big))[1:], true
	}
	c.req = req
	return c
}
