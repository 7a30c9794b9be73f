package query_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/shardline/shardline/internal/ingest"
	"github.com/shardline/shardline/internal/query"
)

// TestLogLevelMeansTheSameInBothFunctions: one LOG_LEVEL value is accepted
// by both functions or by neither, and means the same level in both.
func TestLogLevelMeansTheSameInBothFunctions(t *testing.T) {
	for _, v := range []string{"", "info", "DEBUG", " warn ", "error", "info+2", "DEBUG-4", "warning", "loud"} {
		env := func(k string) string {
			switch k {
			case ingest.EnvTable:
				return "t"
			case ingest.EnvLogLevel:
				return v
			}
			return ""
		}
		ic, ierr := ingest.ConfigFromEnv(env)
		qc, qerr := query.ConfigFromEnv(env)
		if (ierr == nil) != (qerr == nil) {
			t.Errorf("LOG_LEVEL=%q: ingest says %v, query says %v", v, ierr, qerr)
			continue
		}
		if ierr == nil && ic.LogLevel != qc.LogLevel {
			t.Errorf("LOG_LEVEL=%q: ingest logs at %v, query at %v", v, ic.LogLevel, qc.LogLevel)
		}
	}
}

// TestCursorKeyWithoutASecretIsRandom: with no secret configured (make run,
// tests), each process signs cursors with a random key, not one anybody can
// derive from the table's name.
func TestCursorKeyWithoutASecretIsRandom(t *testing.T) {
	env := func(k string) string {
		if k == query.EnvTable {
			return "events"
		}
		return ""
	}
	a, err := query.ConfigFromEnv(env)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := query.ConfigFromEnv(env)
	if len(a.CursorSecret) < query.MinCursorSecret || a.CursorSecret == b.CursorSecret {
		t.Fatalf("cursor keys %q and %q for the same table: want two random keys of at least %d bytes", a.CursorSecret, b.CursorSecret, query.MinCursorSecret)
	}
	if !strings.Contains(a.CursorKeyOrigin(), "random") {
		t.Errorf("the log would say the key is %q", a.CursorKeyOrigin())
	}
}

// secrets is a Secrets Manager client that knows one secret.
type secrets struct {
	arn, value string
	calls      int
}

func (s *secrets) GetSecretValue(_ context.Context, in *secretsmanager.GetSecretValueInput, _ ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error) {
	s.calls++
	if aws.ToString(in.SecretId) != s.arn {
		return nil, errors.New("ResourceNotFoundException: Secrets Manager can't find the specified secret")
	}
	return &secretsmanager.GetSecretValueOutput{SecretString: aws.String(s.value)}, nil
}

// TestLoadCursorSecret: with CURSOR_SECRET_ARN set, the key is the secret's
// value, read once; a missing or short secret is an error naming the
// variable, and without the variable nothing is asked.
func TestLoadCursorSecret(t *testing.T) {
	const arn = "arn:aws:secretsmanager:eu-west-1:000000000000:secret:cursor-AbCdEf"
	key := strings.Repeat("k", 64)
	env := func(secretARN string) func(string) string {
		return func(k string) string {
			return map[string]string{query.EnvTable: "events", query.EnvCursorSecretARN: secretARN}[k]
		}
	}
	ctx := context.Background()

	sm := &secrets{arn: arn, value: key}
	c, err := query.ConfigFromEnv(env(arn))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.LoadCursorSecret(ctx, sm); err != nil || c.CursorSecret != key || sm.calls != 1 {
		t.Fatalf("loaded %q (%v) in %d calls", c.CursorSecret, err, sm.calls)
	}
	if !strings.Contains(c.CursorKeyOrigin(), arn) {
		t.Errorf("origin %q", c.CursorKeyOrigin())
	}

	for name, sm := range map[string]*secrets{
		"missing": {arn: "another", value: key},
		"short":   {arn: arn, value: "password"},
	} {
		c, _ := query.ConfigFromEnv(env(arn))
		random := c.CursorSecret
		err := c.LoadCursorSecret(ctx, sm)
		if err == nil || !strings.Contains(err.Error(), query.EnvCursorSecretARN) {
			t.Errorf("%s secret: %v", name, err)
		}
		if c.CursorSecret != random {
			t.Errorf("%s secret: the key changed to %q", name, c.CursorSecret)
		}
	}

	sm = &secrets{arn: arn, value: key}
	c, _ = query.ConfigFromEnv(env(""))
	if err := c.LoadCursorSecret(ctx, sm); err != nil || sm.calls != 0 {
		t.Errorf("no ARN: %v after %d calls", err, sm.calls)
	}
}
