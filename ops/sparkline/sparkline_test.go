package sparkline

import (
	"slices"
	"testing"
)

func TestDraw(t *testing.T) {
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
		if got := Draw(c.in); got != c.want {
			t.Errorf("Draw(%v) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestFit(t *testing.T) {
	for _, c := range []struct {
		in    []int
		width int
		want  []int
		per   int
	}{
		{[]int{1, 2, 3}, 3, []int{1, 2, 3}, 1},
		{[]int{1, 2, 3}, 80, []int{1, 2, 3}, 1},
		{[]int{1, 2, 3, 4, 5}, 2, []int{6, 9}, 3},
		{[]int{1, 2, 3, 4}, 2, []int{3, 7}, 2},
		{[]int{1, 2}, 0, []int{3}, 2},
		{nil, 10, nil, 1},
	} {
		got, per := Fit(c.in, c.width)
		if !slices.Equal(got, c.want) || per != c.per {
			t.Errorf("Fit(%v, %d) = %v, %d; want %v, %d", c.in, c.width, got, per, c.want, c.per)
		}
	}
}
