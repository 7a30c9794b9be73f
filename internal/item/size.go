package item

import (
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// WriteUnitBytes is what one write capacity unit writes.
const WriteUnitBytes = 1024

// Bytes is an item's size as DynamoDB counts it for capacity: the
// UTF-8 length of each attribute's name plus its value's size
// (docs.aws.amazon.com/amazondynamodb/latest/developerguide/CapacityUnitCalculations.html).
func Bytes(item map[string]types.AttributeValue) int {
	n := 0
	for name, v := range item {
		n += len(name) + valueBytes(v)
	}
	return n
}

// valueBytes is the size of one value: a string or binary its length, a
// number one byte per two significant digits plus one, a Boolean or null
// one byte, a list or map 3 bytes plus one per element plus its elements.
func valueBytes(v types.AttributeValue) int {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return len(v.Value)
	case *types.AttributeValueMemberN:
		return NumberBytes(v.Value)
	case *types.AttributeValueMemberB:
		return len(v.Value)
	case *types.AttributeValueMemberBOOL, *types.AttributeValueMemberNULL:
		return 1
	case *types.AttributeValueMemberSS:
		n := 0
		for _, s := range v.Value {
			n += len(s)
		}
		return n
	case *types.AttributeValueMemberNS:
		n := 0
		for _, s := range v.Value {
			n += NumberBytes(s)
		}
		return n
	case *types.AttributeValueMemberL:
		n := 3
		for _, e := range v.Value {
			n += 1 + valueBytes(e)
		}
		return n
	case *types.AttributeValueMemberM:
		n := 3
		for k, e := range v.Value {
			n += 1 + len(k) + valueBytes(e)
		}
		return n
	}
	return 0
}

// NumberBytes is the size of a number: leading and trailing zeros are
// trimmed, then one byte per two significant digits, plus one.
func NumberBytes(s string) int {
	s = strings.TrimLeft(s, "+-")
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		s = s[:i]
	}
	digits := strings.Trim(strings.Replace(s, ".", "", 1), "0")
	return (len(digits)+1)/2 + 1
}

// WriteUnits is what writing an item of bytes costs: a write unit per KB
// or part of one, at least one.
func WriteUnits(bytes int) int { return max(1, (bytes+WriteUnitBytes-1)/WriteUnitBytes) }
