package apigw

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
)

// TestInvokeDispatchesEachShape: the fixtures in events/ reach the handler
// of their shape, decoded into their aws-lambda-go types; a shape the
// function does not take, or a payload that is no invocation, is an error
// that names the function and what it takes.
func TestInvokeDispatchesEachShape(t *testing.T) {
	var got []string
	hs := Handlers{
		Kinesis: func(_ context.Context, ev events.KinesisEvent) (events.KinesisEventResponse, error) {
			got = append(got, "kinesis "+ev.Records[0].EventSource)
			return events.KinesisEventResponse{}, nil
		},
		HTTP: func(_ context.Context, req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
			got = append(got, "http "+req.RequestContext.HTTP.Method)
			return events.APIGatewayV2HTTPResponse{StatusCode: 202}, nil
		},
		REST: func(_ context.Context, req events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, error) {
			got = append(got, "rest "+req.HTTPMethod)
			return events.APIGatewayProxyResponse{StatusCode: 202}, nil
		},
	}
	for file, want := range map[string]string{
		"kinesis-batch.json":     "kinesis aws:kinesis",
		"api-ingest-v2.json":     "http POST",
		"rest-ingest-v1.json":    "rest POST",
		"api-query-v2.json":      "http GET",
		"kinesis-kpl-batch.json": "kinesis aws:kinesis",
	} {
		payload, err := os.ReadFile("../../events/" + file)
		if err != nil {
			t.Fatal(err)
		}
		got = nil
		if _, err := hs.Invoke(context.Background(), "ingest", payload); err != nil || len(got) != 1 || got[0] != want {
			t.Errorf("%s: handled as %v (%v), want %q", file, got, err, want)
		}
	}

	kinesis, err := os.ReadFile("../../events/kinesis-batch.json")
	if err != nil {
		t.Fatal(err)
	}
	apiOnly := Handlers{HTTP: hs.HTTP, REST: hs.REST}
	for _, c := range []struct {
		hs      Handlers
		payload string
		want    string
	}{
		{apiOnly, string(kinesis), "query: unrecognised invocation: want an API Gateway request"},
		{hs, `{"Records":[{"eventSource":"aws:sqs"}]}`, "query: unrecognised invocation: want a Kinesis event or an API Gateway request"},
		{hs, `[1, 2]`, "query: the invocation payload is not a JSON object"},
		{Handlers{Kinesis: hs.Kinesis}, `{"version":"2.0"}`, "query: unrecognised invocation: want a Kinesis event"},
	} {
		got = nil
		_, err := c.hs.Invoke(context.Background(), "query", []byte(c.payload))
		if err == nil || !strings.HasPrefix(err.Error(), c.want) || len(got) != 0 {
			t.Errorf("%.40s: %v (handled as %v), want an error beginning %q", c.payload, err, got, c.want)
		}
	}
}
