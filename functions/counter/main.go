// Command counter is shardline's counter Lambda function: triggered by the
// events table's stream, it keeps the exact per-minute counts GET /v1/counts
// serves. All logic lives in internal/counts; this file wires configuration
// from the environment (see counts.EnvVars) and starts the Lambda runtime.
package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/shardline/shardline/internal/counts"
	"github.com/shardline/shardline/internal/ddbclient"
	"github.com/shardline/shardline/internal/emf"
)

func main() {
	cfg, err := counts.ConfigFromEnv(os.Getenv)
	log := slog.New(slog.NewJSONHandler(os.Stdout, &slog.HandlerOptions{Level: cfg.LogLevel}))
	if err != nil {
		log.Error("configuration", slog.String("error", err.Error()))
		os.Exit(1)
	}
	client, err := ddbclient.New(context.Background(), 16)
	if err != nil {
		log.Error("DynamoDB client", slog.String("error", err.Error()))
		os.Exit(1)
	}
	f := counts.New(cfg, client, counts.Options{
		Logger:  log,
		Metrics: emf.NewInLog(os.Stdout, counts.Dimensions()),
	})
	lambda.Start(f.Invoke)
}
