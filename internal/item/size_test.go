package item

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// TestBytes checks item sizes and write units against DynamoDB's published
// rules (CapacityUnitCalculations).
func TestBytes(t *testing.T) {
	for s, want := range map[string]int{
		"0": 1, "1": 2, "100": 2, "600": 2, "613": 3, "1234": 3, "12345": 4, "0.5": 2, "-12": 2, "1.5E+3": 2,
		"000000000000000000001": 2, "4000000000000000000000000001": 15,
	} {
		if got := NumberBytes(s); got != want {
			t.Errorf("NumberBytes(%q) = %d, want %d", s, got, want)
		}
	}
	item := map[string]types.AttributeValue{
		"pk":  &types.AttributeValueMemberS{Value: "C#a"},                                                             // 2 + 3
		"c00": &types.AttributeValueMemberN{Value: "613"},                                                             // 3 + 3
		"ok":  &types.AttributeValueMemberBOOL{Value: true},                                                           // 2 + 1
		"l":   &types.AttributeValueMemberL{Value: []types.AttributeValue{&types.AttributeValueMemberS{Value: "ab"}}}, // 1 + 3 + 1 + 2
	}
	if got := Bytes(item); got != 5+6+3+7 {
		t.Errorf("Bytes = %d, want %d", got, 5+6+3+7)
	}
	for _, c := range []struct{ bytes, want int }{{0, 1}, {1024, 1}, {1025, 2}, {2049, 3}} {
		if got := WriteUnits(c.bytes); got != c.want {
			t.Errorf("WriteUnits(%d) = %d, want %d", c.bytes, got, c.want)
		}
	}
}
