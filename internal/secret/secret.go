// Package secret reads a deployment's secret from AWS Secrets Manager. A
// function reads it once, at cold start, and keeps it for the container's
// life: secrets stay out of the function's environment, which anyone who may
// read the function's configuration can see.
package secret

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
)

// API is the part of the Secrets Manager client Get uses.
type API interface {
	GetSecretValue(context.Context, *secretsmanager.GetSecretValueInput, ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error)
}

// Get returns the current string value of the secret id (its ARN or name).
// A secret without a string value (binary only, or empty) is an error.
func Get(ctx context.Context, api API, id string) (string, error) {
	out, err := api.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(id)})
	if err != nil {
		return "", fmt.Errorf("read secret %s: %w", id, err)
	}
	if out.SecretString == nil || *out.SecretString == "" {
		return "", fmt.Errorf("secret %s has no string value: store the key as the secret's SecretString", id)
	}
	return *out.SecretString, nil
}
