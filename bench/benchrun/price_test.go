package benchrun

import "testing"

// TestPricing checks capacity units against DynamoDB's published rules
// (CapacityUnitCalculations); item.TestBytes checks item sizes.
func TestPricing(t *testing.T) {
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
