// Command query is shardline's query Lambda function, behind GET /v1/events
// and GET /v1/quarantine. All logic lives in internal/query; this file wires
// configuration from the environment (see query.EnvVars) and starts the
// Lambda runtime.
package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/shardline/shardline/internal/ddbclient"
	"github.com/shardline/shardline/internal/emf"
	"github.com/shardline/shardline/internal/query"
)

func main() {
	cfg, err := query.ConfigFromEnv(os.Getenv)
	log := slog.New(slog.NewJSONHandler(os.Stdout, &slog.HandlerOptions{Level: cfg.LogLevel}))
	if err != nil {
		log.Error("configuration", slog.String("error", err.Error()))
		os.Exit(1)
	}
	client, err := ddbclient.New(context.Background(), cfg.Concurrency)
	if err != nil {
		log.Error("DynamoDB client", slog.String("error", err.Error()))
		os.Exit(1)
	}
	h := query.NewHandler(cfg, client, query.Options{
		Logger:  log,
		Metrics: emf.New(os.Stdout, map[string]string{"Function": "query"}),
	})
	lambda.Start(h.Invoke)
}
