package query

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"net/url"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/shardline/shardline/testkit/testddb"
)

// lambdaResponseLimit is Lambda's limit on a synchronous invocation's
// response payload, which counts the APIGatewayV2HTTPResponse as JSON.
const lambdaResponseLimit = 6 << 20

// hostileText is about n bytes of characters that JSON escaping grows the
// most, twice over in the Lambda payload ('<' to 7 bytes, '"' and '\' in
// a %q to 8).
func hostileText(r *rand.Rand, n int) string {
	alphabets := [][]string{{"<"}, {"\""}, {"\\"}, {"\x01"}, {"\u2028"}, {"<", "&", "\"", "\\", "\x7f", "é", "😀", "9"}}
	alpha := alphabets[r.IntN(len(alphabets))]
	var b strings.Builder
	b.Grow(n + 4) // the last character may pass n by up to 3 bytes
	for b.Len() < n {
		b.WriteString(alpha[r.IntN(len(alpha))])
	}
	return b.String()
}

// hostileQuery is a request to the query function with one hostile part,
// and the parameter its error must name ("" when it names none).
func hostileQuery(r *rand.Rand) (req events.APIGatewayV2HTTPRequest, names string) {
	big := hostileText(r, []int{300, 60000, 1 << 20}[r.IntN(3)])
	route := []string{EventsRoute, QuarantineRoute, CountsRoute, SourcesRoute}[r.IntN(4)]
	q := url.Values{}
	if route == EventsRoute || route == CountsRoute {
		q.Set("source", "s")
	}
	var bad string
	switch k := r.IntN(8); {
	case k == 0 && route != QuarantineRoute && route != SourcesRoute:
		bad = []string{"source", "type"}[r.IntN(2)]
		q.Set(bad, big)
	case k == 1:
		bad = []string{"from", "to"}[r.IntN(2)]
		q.Set(bad, []string{big, strings.Repeat("9", len(big)), "1960-01-01T00:00:00." + strings.Repeat("0", len(big)) + "Z"}[r.IntN(3)])
	case k == 2 && route == EventsRoute:
		bad = []string{"limit", "order", "consistent", "subject"}[r.IntN(4)]
		q.Set(bad, big)
	case k == 3 && route == CountsRoute:
		bad = []string{"interval", "group_by"}[r.IntN(2)]
		q.Set(bad, big)
	case k == 4 && route != CountsRoute:
		bad = "cursor"
		q.Set(bad, big)
	case k == 5:
		bad = "limit"
		q[bad] = []string{big, big}
	case k == 6:
		bad = "x" + big // unknown: named, cut
		q.Set(bad, big)
	default:
		bad = "limit"
		q.Set(bad, big)
		if route == CountsRoute {
			bad = "x" + big
			q.Set(bad, big)
			q.Del("limit")
		}
	}
	req = events.APIGatewayV2HTTPRequest{Version: "2.0", RawPath: route, RawQueryString: q.Encode()}
	req.RequestContext.HTTP.Method = "GET"
	return req, bad
}

// TestEveryQueryErrorFitsLambda: whatever the query string, a 400 quotes at
// most a bounded piece of any value sent back, and names the parameter;
// so do 404 (a huge path) and 405 (a huge method). 300 seeded cases over
// the four routes.
func TestEveryQueryErrorFitsLambda(t *testing.T) {
	h := newHandler(t, testddb.Table(t), testddb.Endpoint(t))
	most := 0
	for i := range 300 {
		r := rand.New(rand.NewPCG(28, uint64(i)))
		req, bad := hostileQuery(r)
		serve, status := checked(t, h).HTTP, 400
		switch i % 10 {
		case 8:
			req.RawPath, status, bad = "/"+hostileText(r, 1<<20), 404, ""
		case 9:
			req.RequestContext.HTTP.Method, status, bad = hostileText(r, 1<<20), 405, ""
			serve = h.HTTP // no HTTP request can carry that method: openapitest cannot rebuild it
		}
		resp, err := serve(context.Background(), req)
		if err != nil || resp.StatusCode != status {
			t.Fatalf("case %d: %v %d, want %d: %.300s", i, err, resp.StatusCode, status, resp.Body)
		}
		b, _ := json.Marshal(resp)
		most = max(most, len(b))
		if len(b) >= lambdaResponseLimit {
			t.Fatalf("case %d: a %d-byte payload, over Lambda's %d", i, len(b), lambdaResponseLimit)
		}
		var body struct{ Error string }
		if json.Unmarshal([]byte(resp.Body), &body) != nil || body.Error == "" {
			t.Fatalf("case %d: %.300s", i, resp.Body)
		}
		if label := strings.SplitN(body.Error, ": ", 2)[0]; bad != "" && !strings.HasPrefix(bad, strings.SplitN(label, "…", 2)[0]) {
			t.Fatalf("case %d: error %.200q does not name %.40q", i, body.Error, bad)
		}
		if len(body.Error) > 1024 {
			t.Fatalf("case %d: a %d-byte error: %.300s", i, len(body.Error), body.Error)
		}
	}
	t.Logf("largest payload: %d bytes", most)
}
