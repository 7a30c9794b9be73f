package onfailure

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Parse reads a record and checks that it locates a batch of one stream and
// holds its records.
func Parse(body []byte) (Record, error) {
	var r Record
	if err := json.Unmarshal(body, &r); err != nil {
		return r, fmt.Errorf("not an on-failure record: %w", err)
	}
	name := "KinesisBatchInfo"
	switch {
	case r.KinesisBatchInfo == nil && r.DDBStreamBatchInfo == nil:
		return r, errors.New("not a stream on-failure record: it has neither KinesisBatchInfo nor DDBStreamBatchInfo")
	case r.KinesisBatchInfo != nil && r.DDBStreamBatchInfo != nil:
		return r, errors.New("not a stream on-failure record: it has both KinesisBatchInfo and DDBStreamBatchInfo")
	case r.DDBStreamBatchInfo != nil:
		name = "DDBStreamBatchInfo"
	}
	if err := r.Batch().check(r.Source()); err != nil {
		return r, fmt.Errorf("%s.%w", name, err)
	}
	if r.RequestContext.Condition == "" {
		return r, errors.New("requestContext.condition is empty")
	}
	return r, nil
}

func (b *BatchInfo) check(src Source) error {
	isSeq := IsSequenceNumber
	if src == DynamoDB {
		isSeq = isDigits // DynamoDB Local pads its sequence numbers with zeros
	}
	switch {
	case b.StreamARN == "":
		return errors.New("streamArn is empty")
	case b.ShardID == "":
		return errors.New("shardId is empty")
	case !isSeq(b.StartSequenceNumber):
		return fmt.Errorf("startSequenceNumber %q is not a sequence number", b.StartSequenceNumber)
	case !isSeq(b.EndSequenceNumber):
		return fmt.Errorf("endSequenceNumber %q is not a sequence number", b.EndSequenceNumber)
	case CompareSequence(b.StartSequenceNumber, b.EndSequenceNumber) > 0:
		return fmt.Errorf("startSequenceNumber %s is after endSequenceNumber %s", b.StartSequenceNumber, b.EndSequenceNumber)
	}
	return nil
}

// IsSequenceNumber says whether s is a stream sequence number: decimal
// digits, without leading zeros. Kinesis's and DynamoDB Streams' both are.
func IsSequenceNumber(s string) bool {
	if s == "" || len(s) > 128 || (s[0] == '0' && len(s) > 1) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// isDigits says whether s is decimal digits, leading zeros allowed.
func isDigits(s string) bool {
	return s != "" && len(s) <= 128 && strings.Trim(s, "0123456789") == ""
}

// CompareSequence orders two sequence numbers: -1, 0 or 1. They are decimal
// numbers of up to 128 bits, too long for an integer type: without leading
// zeros, shorter is smaller.
func CompareSequence(a, b string) int {
	a, b = noLeadingZeros(a), noLeadingZeros(b)
	switch {
	case len(a) < len(b):
		return -1
	case len(a) > len(b):
		return 1
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func noLeadingZeros(s string) string {
	if t := strings.TrimLeft(s, "0"); t != "" || s == "" {
		return t
	}
	return "0"
}
