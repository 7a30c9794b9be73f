package plural

import "testing"

func TestOf(t *testing.T) {
	for _, c := range []struct {
		n    int
		want string
	}{{0, "records"}, {1, "record"}, {2, "records"}, {-1, "records"}} {
		if got := Of(c.n, "record", "records"); got != c.want {
			t.Errorf("Of(%d) = %q, want %q", c.n, got, c.want)
		}
	}
}

func TestCount(t *testing.T) {
	if got := Count(1, "event", "events"); got != "1 event" {
		t.Errorf("Count(1) = %q", got)
	}
	if got := Count(3, "event was", "events were"); got != "3 events were" {
		t.Errorf("Count(3) = %q", got)
	}
}
