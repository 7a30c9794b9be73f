package benchrun

import (
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// DynamoDB's pricing units: a write unit per KB of the item written, a
// (strongly consistent) read unit per 4 KB read.
const (
	writeUnitBytes = 1024
	readUnitBytes  = 4096
)

// itemBytes is an item's size as DynamoDB counts it for capacity: the
// UTF-8 length of each attribute's name plus its value's size
// (docs.aws.amazon.com/amazondynamodb/latest/developerguide/CapacityUnitCalculations.html).
func itemBytes(item map[string]types.AttributeValue) int {
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
		return numberBytes(v.Value)
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
			n += numberBytes(s)
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

// numberBytes is the size of a number: leading and trailing zeros are
// trimmed, then one byte per two significant digits, plus one.
func numberBytes(s string) int {
	s = strings.TrimLeft(s, "+-")
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		s = s[:i]
	}
	digits := strings.Trim(strings.Replace(s, ".", "", 1), "0")
	return (len(digits)+1)/2 + 1
}

// writeUnits prices one write as DynamoDB does: the larger of the item's
// size before and after, in whole KB, at least one.
func writeUnits(before, after int) int {
	return max(1, (max(before, after)+writeUnitBytes-1)/writeUnitBytes)
}

// readUnits prices one Query page of the given bytes: the items' sizes
// summed and rounded up to 4 KB, halved when eventually consistent.
func readUnits(bytes int, consistent bool) float64 {
	units := float64(max(1, (bytes+readUnitBytes-1)/readUnitBytes))
	if !consistent {
		units /= 2
	}
	return units
}
