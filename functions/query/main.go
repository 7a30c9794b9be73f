// Command query is shardline's query Lambda function, behind GET /v1/events
// and GET /v1/quarantine. Until the query path lands (issue 3) it answers
// 501 to every request, so a deployed stack says plainly what is missing.
package main

import (
	"context"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
)

func main() {
	lambda.Start(func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		return events.APIGatewayV2HTTPResponse{
			StatusCode: 501,
			Headers:    map[string]string{"Content-Type": "application/json"},
			Body:       `{"error":"the query API is not implemented yet"}`,
		}, nil
	})
}
