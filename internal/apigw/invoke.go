package apigw

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/aws/aws-lambda-go/events"
)

// Handlers are what a function answers to each shape of invocation it
// takes; a nil handler is a shape it does not take. Invoke is the one
// dispatch of both functions' Lambda entry points.
type Handlers struct {
	Kinesis func(context.Context, events.KinesisEvent) (events.KinesisEventResponse, error)
	HTTP    func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error)
	REST    func(context.Context, events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, error)
}

// Invoke tells payload's shape, decodes it into its aws-lambda-go type and
// answers it with the handler of that shape. Errors begin with name, the
// function's.
func (hs Handlers) Invoke(ctx context.Context, name string, payload json.RawMessage) (any, error) {
	shape, err := ShapeOf(payload)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	switch {
	case shape == Kinesis && hs.Kinesis != nil:
		var ev events.KinesisEvent
		if err := json.Unmarshal(payload, &ev); err != nil {
			return nil, fmt.Errorf("%s: decode Kinesis event: %w", name, err)
		}
		return hs.Kinesis(ctx, ev)
	case shape == HTTP && hs.HTTP != nil:
		var req events.APIGatewayV2HTTPRequest
		if err := json.Unmarshal(payload, &req); err != nil {
			return nil, fmt.Errorf("%s: decode HTTP API request: %w", name, err)
		}
		return hs.HTTP(ctx, req)
	case shape == REST && hs.REST != nil:
		var req events.APIGatewayProxyRequest
		if err := json.Unmarshal(payload, &req); err != nil {
			return nil, fmt.Errorf("%s: decode REST API request: %w", name, err)
		}
		return hs.REST(ctx, req)
	}
	return nil, fmt.Errorf("%s: unrecognised invocation: want %s", name, hs.takes())
}

// takes names the shapes hs answers, for an error.
func (hs Handlers) takes() string {
	var want []string
	if hs.Kinesis != nil {
		want = append(want, "a Kinesis event")
	}
	if hs.HTTP != nil || hs.REST != nil {
		want = append(want, "an API Gateway request")
	}
	if len(want) == 0 {
		return "nothing: no handler is set"
	}
	return strings.Join(want, " or ")
}
