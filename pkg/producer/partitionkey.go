package producer

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf16"

	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"
)

// MaxPartitionKeyLen is the longest partition key Kinesis takes, in the
// characters it counts: UTF-16 code units (an emoji is two).
const MaxPartitionKeyLen = 256

// keyLen is s's length as Kinesis counts it.
func keyLen(s string) int {
	n := 0
	for _, r := range s {
		n += utf16.RuneLen(r)
	}
	return n
}

// defaultKey is the partition key of an event by default: its id, or,
// when the id is longer than a key may be, the SHA-256 of the id in hex
// (64 characters), which spreads over the shards as ids do.
func defaultKey(id string) string {
	if keyLen(id) <= MaxPartitionKeyLen {
		return id
	}
	sum := sha256.Sum256([]byte(id))
	return hex.EncodeToString(sum[:])
}

// checkKey refuses a partition key Kinesis would refuse, which would fail
// every record of the PutRecords request that carried it.
func checkKey(id, key string) error {
	if n := keyLen(key); n < 1 || n > MaxPartitionKeyLen {
		return fmt.Errorf("%w: event %q: the key is %d characters (UTF-16 code units); Kinesis takes 1 to %d",
			ErrPartitionKey, clip(id, 64), n, MaxPartitionKeyLen)
	}
	return nil
}

// refusedMember finds the records of a request that Kinesis refused
// whole: a ValidationException lists each bad member as
// "Value '...' at 'records.N.member.partitionKey' failed to satisfy
// constraint: ...", N counted from 1. It returns the index of each such
// record among n, with the part of the message about it; none when the
// error is not a validation of records (a bad stream name, say), which
// fails the request whatever it carries.
func refusedMember(err error, n int) map[int]string {
	var ve *types.ValidationException
	if !errors.As(err, &ve) {
		return nil
	}
	msg := ve.ErrorMessage()
	out := map[int]string{}
	for _, m := range memberRE.FindAllStringSubmatchIndex(msg, -1) {
		i, convErr := strconv.Atoi(msg[m[2]:m[3]])
		if convErr != nil || i < 1 || i > n {
			continue
		}
		field := msg[m[4]:m[5]]
		why := msg[m[1]:]
		if end := strings.Index(why, "; Value "); end >= 0 {
			why = why[:end]
		}
		out[i-1] = fmt.Sprintf("Kinesis refused the record's %s (ValidationException:%s)", fieldName(field), clip(why, 200))
	}
	return out
}

var memberRE = regexp.MustCompile(`at 'records\.([0-9]+)\.member\.([A-Za-z]+)' failed to satisfy constraint:`)

// fieldName is a record's member as a person calls it.
func fieldName(member string) string {
	switch member {
	case "partitionKey":
		return "partition key"
	case "data":
		return "data"
	case "explicitHashKey":
		return "explicit hash key"
	}
	return member
}

// clip is s cut to at most n bytes, marked when cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
