// Package ddberr classifies the errors of DynamoDB calls in one place, from
// the SDK's typed errors: the writer asks whether to retry, the reader
// whether the GSI can serve.
package ddberr

import (
	"context"
	"errors"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
)

// Class is what an error from a DynamoDB call means to its caller.
type Class uint8

// The classes.
const (
	// None: there is no error.
	None Class = iota
	// Transient: no verdict from DynamoDB (a network error, a reset
	// connection, an error the SDK could not place). Retrying may help.
	Transient
	// Throttled: a throughput limit of the table, an index, a partition or
	// the account was exceeded. Retry after a back-off.
	Throttled
	// ServerFault: DynamoDB failed (InternalServerError, HTTP 5xx). Retry.
	ServerFault
	// Invalid: DynamoDB refused the request's content (ValidationException).
	// The same request will fail again.
	Invalid
	// Missing: the table or index does not exist.
	Missing
	// Refused: any other client fault (access denied, a failed condition).
	// Retrying will not help until something outside the call changes.
	Refused
	// Ended: the caller's context was canceled or reached its deadline.
	Ended
)

// String names the class.
func (c Class) String() string {
	return [...]string{"none", "transient", "throttled", "server fault", "invalid", "missing", "refused", "ended"}[c]
}

// Retryable: the same call may succeed if made again.
func (c Class) Retryable() bool { return c == Transient || c == Throttled || c == ServerFault }

// Classify says what err, returned by a DynamoDB call, means. It looks for
// the SDK's typed errors with errors.As, and falls back to the error code
// only where DynamoDB's model has no type (ValidationException,
// ServiceUnavailable, InternalFailure).
func Classify(err error) Class {
	switch {
	case err == nil:
		return None
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return Ended
	case throttled(err):
		return Throttled
	case serverFault(err):
		return ServerFault
	case missing(err):
		return Missing
	}
	var ae smithy.APIError
	switch {
	case !errors.As(err, &ae):
		return Transient
	case ae.ErrorCode() == "ValidationException":
		return Invalid
	case ae.ErrorFault() == smithy.FaultClient:
		return Refused
	}
	return Transient // an API error of unknown fault: as the SDK does, try again
}

// Retryable: err is one that a retry of the same call may not meet again.
func Retryable(err error) bool { return Classify(err).Retryable() }

// IndexUnavailable: a query of a global secondary index failed because the
// index cannot serve (throttled, failing, missing, or still being built),
// not because of the query: the base table may serve instead.
func IndexUnavailable(err error) bool {
	switch Classify(err) {
	case Throttled, ServerFault, Missing:
		return true
	case Invalid:
		// DynamoDB has no type for "the table does not have the specified
		// index" nor for "cannot read from backfilling global secondary
		// index": they are ValidationExceptions, told apart by message.
		var ae smithy.APIError
		errors.As(err, &ae)
		m := strings.ToLower(ae.ErrorMessage())
		return strings.Contains(m, "index") || strings.Contains(m, "backfill")
	}
	return false
}

// Code is err's DynamoDB error code, such as
// "ProvisionedThroughputExceededException", or its message when it has none.
func Code(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return err.Error()
}

func throttled(err error) bool {
	var (
		pt *types.ProvisionedThroughputExceededException
		rl *types.RequestLimitExceeded
		th *types.ThrottlingException
		le *types.LimitExceededException // too many control-plane operations at once
	)
	return errors.As(err, &pt) || errors.As(err, &rl) || errors.As(err, &th) || errors.As(err, &le)
}

// KeyHeat says whether a throttling error is laid on partition keys, a
// hot key that a writer should pace, rather than on a whole table, index
// or account, which no pace of one key relieves: back off instead.
// DynamoDB's ThrottlingReasons say which (TroubleshootingThrottling in its
// developer guide): a reason ending in KeyRangeThroughputExceeded is a hot
// key; AccountLimitExceeded, MaxOnDemandThroughputExceeded and
// ProvisionedThroughputExceeded are a table's or an index's. Without
// reasons, a ProvisionedThroughputExceededException is key heat (on an
// on-demand table it is the partition's ceiling); RequestLimitExceeded,
// ThrottlingException and LimitExceededException are not.
func KeyHeat(err error) bool {
	var (
		pt *types.ProvisionedThroughputExceededException
		rl *types.RequestLimitExceeded
		th *types.ThrottlingException
	)
	var reasons []types.ThrottlingReason
	switch {
	case errors.As(err, &pt):
		if len(pt.ThrottlingReasons) == 0 {
			return true
		}
		reasons = pt.ThrottlingReasons
	case errors.As(err, &rl):
		reasons = rl.ThrottlingReasons
	case errors.As(err, &th):
		reasons = th.ThrottlingReasons
	}
	for _, r := range reasons {
		if strings.HasSuffix(aws.ToString(r.Reason), "KeyRangeThroughputExceeded") {
			return true
		}
	}
	return false
}

func serverFault(err error) bool {
	var ise *types.InternalServerError
	if errors.As(err, &ise) {
		return true
	}
	var ae smithy.APIError
	if errors.As(err, &ae) {
		switch ae.ErrorCode() {
		case "ServiceUnavailable", "InternalFailure": // not in DynamoDB's model
			return true
		}
		if ae.ErrorFault() == smithy.FaultServer {
			return true
		}
	}
	var re *awshttp.ResponseError
	return errors.As(err, &re) && re.HTTPStatusCode() >= 500
}

func missing(err error) bool {
	var (
		rnf *types.ResourceNotFoundException
		inf *types.IndexNotFoundException
		tnf *types.TableNotFoundException
	)
	return errors.As(err, &rnf) || errors.As(err, &inf) || errors.As(err, &tnf)
}
