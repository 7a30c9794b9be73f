package devserver

import "testing"

func TestSparkline(t *testing.T) {
	for _, c := range []struct {
		in   []int
		want string
	}{
		{nil, ""},
		{[]int{0, 0}, "  "},
		{[]int{1}, "█"},
		{[]int{0, 1, 8}, " ▁█"},
		{[]int{1, 2, 3, 4, 5, 6, 7, 8}, "▁▂▃▄▅▆▇█"},
		{[]int{1, 1000}, "▁█"},
		{[]int{999, 1000}, "██"},
	} {
		if got := sparkline(c.in); got != c.want {
			t.Errorf("sparkline(%v) = %q, want %q", c.in, got, c.want)
		}
	}
}
