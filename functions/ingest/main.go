// Command ingest is shardline's ingest Lambda function: it takes Kinesis
// batches and API Gateway requests and writes their events to the events
// table. All logic lives in internal/ingest; this file wires configuration
// from the environment (see ingest.EnvVars) and starts the Lambda runtime.
package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/shardline/shardline/internal/ddbclient"
	"github.com/shardline/shardline/internal/emf"
	"github.com/shardline/shardline/internal/ingest"
)

func main() {
	cfg, err := ingest.ConfigFromEnv(os.Getenv)
	log := slog.New(slog.NewJSONHandler(os.Stdout, &slog.HandlerOptions{Level: cfg.LogLevel}))
	if err != nil {
		log.Error("configuration", slog.String("error", err.Error()))
		os.Exit(1)
	}
	client, err := ddbclient.New(context.Background(), cfg.WriteConcurrency)
	if err != nil {
		log.Error("DynamoDB client", slog.String("error", err.Error()))
		os.Exit(1)
	}
	h := ingest.New(cfg, client, ingest.Options{
		Logger:  log,
		Metrics: emf.NewInLog(os.Stdout, map[string]string{"Function": ingest.FunctionName}),
	})
	lambda.Start(h.Invoke)
}
