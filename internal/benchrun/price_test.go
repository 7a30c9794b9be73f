package benchrun

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// TestPricing checks item sizes and capacity units against DynamoDB's
// published rules (CapacityUnitCalculations).
func TestPricing(t *testing.T) {
	for s, want := range map[string]int{
		"0": 1, "1": 2, "100": 2, "600": 2, "613": 3, "1234": 3, "12345": 4, "0.5": 2, "-12": 2, "1.5E+3": 2,
		"000000000000000000001": 2, "4000000000000000000000000001": 15,
	} {
		if got := numberBytes(s); got != want {
			t.Errorf("numberBytes(%q) = %d, want %d", s, got, want)
		}
	}
	item := map[string]types.AttributeValue{
		"pk":  &types.AttributeValueMemberS{Value: "C#a"},                                                             // 2 + 3
		"c00": &types.AttributeValueMemberN{Value: "613"},                                                             // 3 + 3
		"ok":  &types.AttributeValueMemberBOOL{Value: true},                                                           // 2 + 1
		"l":   &types.AttributeValueMemberL{Value: []types.AttributeValue{&types.AttributeValueMemberS{Value: "ab"}}}, // 1 + 3 + 1 + 2
	}
	if got := itemBytes(item); got != 5+6+3+7 {
		t.Errorf("itemBytes = %d, want %d", got, 5+6+3+7)
	}
	for _, c := range []struct{ before, after, want int }{{0, 0, 1}, {1024, 10, 1}, {1025, 0, 2}, {100, 2049, 3}} {
		if got := writeUnits(c.before, c.after); got != c.want {
			t.Errorf("writeUnits(%d, %d) = %d, want %d", c.before, c.after, got, c.want)
		}
	}
	for _, c := range []struct {
		bytes      int
		consistent bool
		want       float64
	}{{0, false, 0.5}, {4096, true, 1}, {4097, false, 1}, {170 * 1024, false, 21.5}} {
		if got := readUnits(c.bytes, c.consistent); got != c.want {
			t.Errorf("readUnits(%d, %v) = %v, want %v", c.bytes, c.consistent, got, c.want)
		}
	}
}
