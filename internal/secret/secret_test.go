package secret

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
)

// fake answers GetSecretValue from its fields and counts the calls.
type fake struct {
	value *string
	err   error
	asked []string
}

func (f *fake) GetSecretValue(_ context.Context, in *secretsmanager.GetSecretValueInput, _ ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error) {
	f.asked = append(f.asked, aws.ToString(in.SecretId))
	if f.err != nil {
		return nil, f.err
	}
	return &secretsmanager.GetSecretValueOutput{SecretString: f.value}, nil
}

const arn = "arn:aws:secretsmanager:eu-west-1:000000000000:secret:cursor-AbCdEf"

func TestGet(t *testing.T) {
	f := &fake{value: aws.String("s3cr3t")}
	v, err := Get(context.Background(), f, arn)
	if err != nil || v != "s3cr3t" || len(f.asked) != 1 || f.asked[0] != arn {
		t.Fatalf("Get = %q, %v; asked %v", v, err, f.asked)
	}
	denied := errors.New("AccessDeniedException: not authorized")
	for _, f := range []*fake{{err: denied}, {}, {value: aws.String("")}} {
		_, err := Get(context.Background(), f, arn)
		if err == nil || !strings.Contains(err.Error(), arn) {
			t.Errorf("%+v: error %v does not name the secret", f, err)
		}
		if f.err != nil && !errors.Is(err, denied) {
			t.Errorf("the SDK's error is not wrapped: %v", err)
		}
	}
}
