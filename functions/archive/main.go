// Command archive is shardline's archive Lambda function: triggered by the
// events table's stream, it writes every stored event to the archive bucket
// as gzip JSON lines, partitioned by bucket of sources and UTC day, for Athena. All
// logic lives in internal/archive; this file wires configuration from the
// environment (see archive.EnvVars) and starts the Lambda runtime.
package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/shardline/shardline/internal/archive"
	"github.com/shardline/shardline/internal/emf"
)

func main() {
	cfg, err := archive.ConfigFromEnv(os.Getenv)
	log := slog.New(slog.NewJSONHandler(os.Stdout, &slog.HandlerOptions{Level: cfg.LogLevel}))
	if err != nil {
		log.Error("configuration", slog.String("error", err.Error()))
		os.Exit(1)
	}
	aws, err := config.LoadDefaultConfig(context.Background())
	if err != nil {
		log.Error("AWS configuration", slog.String("error", err.Error()))
		os.Exit(1)
	}
	f := archive.New(cfg, s3.NewFromConfig(aws), archive.Options{
		Logger:  log,
		Metrics: emf.NewInLog(os.Stdout, map[string]string{"Function": "archive"}),
	})
	lambda.Start(f.Invoke)
}
