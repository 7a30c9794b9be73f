// Command countfold is shardline's scheduled fold Lambda function:
// triggered every minute by the stack's EventBridge schedule, it folds the
// counter's links into bucket packs and rolls the hours that ended up into
// per-source items (docs/counts.md). All logic lives in internal/counts;
// this file wires configuration from the environment (see
// counts.FoldEnvVars) and starts the Lambda runtime.
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
	cfg, err := counts.FoldConfigFromEnv(os.Getenv)
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
	f := counts.NewFold(cfg, client, counts.Options{
		Logger:  log,
		Metrics: emf.NewInLog(os.Stdout, counts.FoldDimensions()),
	})
	lambda.Start(f.Invoke)
}
