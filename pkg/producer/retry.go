package producer

import (
	"context"
	"errors"
	"strings"

	"github.com/aws/smithy-go"
)

// retryable says whether a failed PutRecords request may succeed if made
// again: throttling, limits, server faults and transport errors may;
// a client fault (no such stream, access denied, a bad argument) or the
// producer's own context ending may not.
func retryable(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var ae smithy.APIError
	if !errors.As(err, &ae) {
		return true // a connection reset, a timeout: the request may not have arrived
	}
	switch ae.ErrorCode() {
	case "ProvisionedThroughputExceededException", "LimitExceededException", "KMSThrottlingException",
		"ThrottlingException", "RequestLimitExceeded", "InternalFailure", "ServiceUnavailable":
		return true
	}
	return ae.ErrorFault() == smithy.FaultServer
}

// retryableCode says whether a PutRecords entry's ErrorCode is worth
// another attempt: throttling and internal failures are; KMS errors other
// than throttling (a disabled or missing key, access denied) are not.
func retryableCode(code string) bool {
	return !strings.HasPrefix(code, "KMS") || code == "KMSThrottlingException"
}
