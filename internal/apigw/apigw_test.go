package apigw

import (
	"net/url"
	"os"
	"path/filepath"
	"testing"

	"github.com/aws/aws-lambda-go/events"
)

func TestShapeOfSamples(t *testing.T) {
	for file, want := range map[string]Shape{
		"kinesis-batch.json": Kinesis, "api-ingest-v2.json": HTTP, "rest-ingest-v1.json": REST, "api-query-v2.json": HTTP,
	} {
		b, err := os.ReadFile(filepath.Join("..", "..", "events", file))
		if err != nil {
			t.Fatal(err)
		}
		if got, err := ShapeOf(b); err != nil || got != want {
			t.Errorf("%s: %v %v, want %v", file, got, err, want)
		}
	}
	for _, p := range []string{`{}`, `{"Records":[{"eventSource":"aws:sqs"}]}`} {
		if got, err := ShapeOf([]byte(p)); err != nil || got != Unknown {
			t.Errorf("%s: %v %v", p, got, err)
		}
	}
	if _, err := ShapeOf([]byte(`[`)); err == nil {
		t.Error("malformed payload accepted")
	}
}

func TestFromREST(t *testing.T) {
	r := FromREST(events.APIGatewayProxyRequest{
		HTTPMethod: "GET", Path: "/prod/v1/events",
		MultiValueHeaders:               map[string][]string{"Content-TYPE": {"a", "b"}},
		MultiValueQueryStringParameters: map[string][]string{"source": {"a#b"}, "x": {"1", "2"}},
	})
	q, _ := url.ParseQuery(r.RawQuery)
	if r.Header("content-type") != "a,b" || q.Get("source") != "a#b" || len(q["x"]) != 2 || !r.Received.IsZero() {
		t.Fatalf("%+v", r)
	}
	resp := Error(404, "no %s", "route").With("Allow", "GET")
	if resp.Status != 404 || resp.Body != `{"error":"no route"}` || resp.HTTP().Headers["Allow"] != "GET" || resp.REST().StatusCode != 404 {
		t.Fatalf("%+v", resp)
	}
}
