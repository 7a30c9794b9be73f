// Command hello is the smallest Go Lambda function, built as the
// functions are (make build's flags): the baseline `make bench` measures
// their cold start against.
package main

import (
	"context"
	"encoding/json"

	"github.com/aws/aws-lambda-go/lambda"
)

func main() {
	lambda.Start(func(context.Context, json.RawMessage) (map[string]string, error) {
		return map[string]string{"hello": "world"}, nil
	})
}
