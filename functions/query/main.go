// Command query is shardline's query Lambda function, behind the four read
// routes: GET /v1/events, GET /v1/quarantine, GET /v1/counts and
// GET /v1/sources. All logic lives in internal/query; this file wires
// configuration from the environment (see query.EnvVars), reads the cursor
// key from Secrets Manager once per container, and starts the Lambda
// runtime.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/shardline/shardline/internal/ddbclient"
	"github.com/shardline/shardline/internal/emf"
	"github.com/shardline/shardline/internal/query"
)

func main() {
	ctx := context.Background()
	cfg, err := query.ConfigFromEnv(os.Getenv)
	log := slog.New(slog.NewJSONHandler(os.Stdout, &slog.HandlerOptions{Level: cfg.LogLevel}))
	if err == nil {
		err = loadCursorSecret(ctx, &cfg)
	}
	if err != nil {
		log.Error("configuration", slog.String("error", err.Error()))
		os.Exit(1)
	}
	level := slog.LevelInfo
	if cfg.CursorSecretARN == "" {
		level = slog.LevelWarn
	}
	log.Log(ctx, level, "cursor key", slog.String("from", cfg.CursorKeyOrigin()))
	client, err := ddbclient.New(ctx, cfg.Concurrency)
	if err != nil {
		log.Error("DynamoDB client", slog.String("error", err.Error()))
		os.Exit(1)
	}
	h := query.New(cfg, client, query.Options{
		Logger:  log,
		Metrics: emf.NewInLog(os.Stdout, map[string]string{"Function": query.FunctionName}),
	})
	lambda.Start(h.Invoke)
}

// loadCursorSecret reads the cursor key from the secret CURSOR_SECRET_ARN
// names, when it names one.
func loadCursorSecret(ctx context.Context, cfg *query.Config) error {
	if cfg.CursorSecretARN == "" {
		return nil
	}
	aws, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return fmt.Errorf("AWS configuration: %w", err)
	}
	return cfg.LoadCursorSecret(ctx, secretsmanager.NewFromConfig(aws))
}
