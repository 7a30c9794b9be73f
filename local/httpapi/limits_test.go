package httpapi_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/shardline/shardline/local/httpapi"
)

// TestInvokeLimit: a body API Gateway takes (under 10 MB) but whose event
// is over Lambda's invocation limit once the body is escaped into it gets
// API Gateway's 413, and the function is not invoked; a body whose event
// fits is passed on.
func TestInvokeLimit(t *testing.T) {
	var invoked []int
	mux := httpapi.NewMux()
	mux.Handle("POST /v1/events", func(_ context.Context, req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		invoked = append(invoked, len(req.Body))
		return events.APIGatewayV2HTTPResponse{StatusCode: http.StatusAccepted}, nil
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	for _, c := range []struct {
		name   string
		body   string
		status int
	}{
		{"3.2 MB of <, 19 MB escaped", `"` + strings.Repeat("<", 3_200_000) + `"`, http.StatusRequestEntityTooLarge},
		{"6,280,000 plain bytes", `"` + strings.Repeat("x", 6_279_998) + `"`, http.StatusAccepted},
		{"6,291,456 plain bytes", `"` + strings.Repeat("x", httpapi.MaxInvokeBytes-2) + `"`, http.StatusRequestEntityTooLarge},
	} {
		resp, err := http.Post(srv.URL+"/v1/events", "application/json", strings.NewReader(c.body))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.status {
			t.Fatalf("%s: %d %s, want %d", c.name, resp.StatusCode, b, c.status)
		}
		var answer struct{ Message string }
		if c.status == http.StatusRequestEntityTooLarge && (json.Unmarshal(b, &answer) != nil || answer.Message != "Request Entity Too Large") {
			t.Fatalf("%s: answer %s, want API Gateway's", c.name, b)
		}
	}
	if len(invoked) != 1 || invoked[0] != 6_280_000 {
		t.Fatalf("the function was invoked with bodies of %v bytes, want only the 6,280,000", invoked)
	}
}
