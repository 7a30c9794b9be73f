package ddberr

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// answer is an error answer in DynamoDB's JSON protocol, as DynamoDB sends
// it.
type answer struct {
	status        int
	code, message string
}

// callWith makes a real SDK Query against a server that gives answer a,
// without the SDK's retries, and returns the error the SDK built from it.
func callWith(t *testing.T, ctx context.Context, a answer) error {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		w.WriteHeader(a.status)
		fmt.Fprintf(w, `{"__type":"com.amazonaws.dynamodb.v20120810#%s","message":%q}`, a.code, a.message)
	}))
	defer srv.Close()
	return query(ctx, srv.URL)
}

func query(ctx context.Context, endpoint string) error {
	c := dynamodb.New(dynamodb.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(endpoint),
		Credentials:  credentials.NewStaticCredentialsProvider("local", "local", ""),
		Retryer:      aws.NopRetryer{},
	})
	_, err := c.Query(ctx, &dynamodb.QueryInput{TableName: aws.String("t")})
	if err == nil {
		return errors.New("the call succeeded")
	}
	return fmt.Errorf("read shard 3: %w", err) // wrapped, as callers wrap
}

// TestClassify: the errors the SDK builds from DynamoDB's answers fall in
// the classes the writer and the reader act on.
func TestClassify(t *testing.T) {
	cases := []struct {
		answer
		class Class
		index bool // the GSI cannot serve
	}{
		{answer{400, "ProvisionedThroughputExceededException", "slow down"}, Throttled, true},
		{answer{400, "ThrottlingException", "slow down"}, Throttled, true},
		{answer{400, "RequestLimitExceeded", "account limit"}, Throttled, true},
		{answer{400, "LimitExceededException", "too many tables"}, Throttled, true},
		{answer{500, "InternalServerError", "oops"}, ServerFault, true},
		{answer{503, "ServiceUnavailable", "later"}, ServerFault, true},
		{answer{500, "InternalFailure", "oops"}, ServerFault, true},
		{answer{502, "BadGateway", "proxy"}, ServerFault, true},
		{answer{400, "ResourceNotFoundException", "no table"}, Missing, true},
		{answer{400, "ValidationException", "The table does not have the specified index: by-source-hour"}, Invalid, true},
		{answer{400, "ValidationException", "Cannot read from backfilling global secondary index: by-source-hour"}, Invalid, true},
		{answer{400, "ValidationException", "Item size has exceeded the maximum allowed size"}, Invalid, false},
		{answer{400, "ConditionalCheckFailedException", "the condition failed"}, Refused, false},
		{answer{400, "AccessDeniedException", "not allowed"}, Transient, false}, // not in the model: no fault known
	}
	for _, c := range cases {
		err := callWith(t, context.Background(), c.answer)
		if got := Classify(err); got != c.class {
			t.Errorf("%s: class %v, want %v (%v)", c.code, got, c.class, err)
		}
		if got := IndexUnavailable(err); got != c.index {
			t.Errorf("%s: IndexUnavailable %v, want %v", c.code, got, c.index)
		}
		if got := Code(err); got != c.code {
			t.Errorf("%s: Code %q", c.code, got)
		}
		if Retryable(err) != c.class.Retryable() {
			t.Errorf("%s: Retryable disagrees with the class", c.code)
		}
	}
}

// TestClassifyWithoutAnswer: errors that carry no verdict from DynamoDB.
func TestClassifyWithoutAnswer(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close() // nothing listens there now
	if err := query(context.Background(), url); Classify(err) != Transient || !Retryable(err) {
		t.Errorf("connection refused: %v %v", Classify(err), err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := callWith(t, ctx, answer{400, "ThrottlingException", ""}); Classify(err) != Ended || Retryable(err) {
		t.Errorf("canceled context: %v %v", Classify(err), err)
	}
	if Classify(nil) != None || Retryable(nil) {
		t.Error("nil is an error")
	}
	if Code(errors.New("plain")) != "plain" {
		t.Error("Code of an error without a code")
	}
}

func TestClassString(t *testing.T) {
	for c := None; c <= Ended; c++ {
		if c.String() == "" {
			t.Errorf("class %d has no name", c)
		}
	}
}

// TestKeyHeat: DynamoDB's throttling answers, with the ThrottlingReasons it
// sends, as the SDK reads them: a hot key is paced, a table's or the
// account's limit is backed off from.
func TestKeyHeat(t *testing.T) {
	const arn = "arn:aws:dynamodb:us-east-1:000000000000:table/t"
	for _, c := range []struct {
		code, reasons string
		heat          bool
	}{
		{"ProvisionedThroughputExceededException", ``, true},
		{"ProvisionedThroughputExceededException", `[{"reason":"TableWriteKeyRangeThroughputExceeded","resource":"` + arn + `"}]`, true},
		{"ProvisionedThroughputExceededException", `[{"reason":"IndexWriteKeyRangeThroughputExceeded","resource":"` + arn + `/index/g"}]`, true},
		{"ProvisionedThroughputExceededException", `[{"reason":"TableWriteProvisionedThroughputExceeded","resource":"` + arn + `"}]`, false},
		{"ThrottlingException", `[{"reason":"TableWriteMaxOnDemandThroughputExceeded","resource":"` + arn + `"}]`, false},
		{"ThrottlingException", `[{"reason":"TableWriteKeyRangeThroughputExceeded","resource":"` + arn + `"}]`, true},
		{"ThrottlingException", ``, false},
		{"RequestLimitExceeded", `[{"reason":"TableWriteAccountLimitExceeded","resource":"` + arn + `"}]`, false},
		{"RequestLimitExceeded", ``, false},
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/x-amz-json-1.0")
			w.WriteHeader(400)
			body := fmt.Sprintf(`{"__type":"com.amazonaws.dynamodb.v20120810#%s","message":"throttled"`, c.code)
			if c.reasons != "" {
				field := "ThrottlingReasons"
				if c.code == "ThrottlingException" {
					field = "throttlingReasons" // so DynamoDB's model names it
				}
				body += `,"` + field + `":` + c.reasons
			}
			fmt.Fprint(w, body+"}")
		}))
		err := query(context.Background(), srv.URL)
		srv.Close()
		if Classify(err) != Throttled {
			t.Fatalf("%s %s: class %v", c.code, c.reasons, Classify(err))
		}
		if got := KeyHeat(err); got != c.heat {
			t.Errorf("%s %s: KeyHeat %v, want %v", c.code, c.reasons, got, c.heat)
		}
	}
	if KeyHeat(errors.New("not DynamoDB's")) {
		t.Error("an unknown error is key heat")
	}
}
