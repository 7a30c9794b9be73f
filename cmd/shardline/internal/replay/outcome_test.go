package replay

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/shardline/shardline/internal/item"
)

// TestJudge: how outcomes read, including a JSON array whose events are
// not all valid, and a reason too long for a mark.
func TestJudge(t *testing.T) {
	cases := []struct {
		in    reingested
		state item.ReplayState
		want  string
	}{
		{reingested{Events: 1}, item.ReplayStored, "stored: 1 event"},
		{reingested{Events: 3}, item.ReplayStored, "stored: 3 events"},
		{reingested{Events: 2, Invalid: []string{"event 1: id: is required and must be a non-empty string"}},
			item.ReplayStored, "stored: 2 events; still invalid: 1 (event 1: id: is required and must be a non-empty string)"},
		{reingested{Invalid: []string{"event 0: id: x", "event 4: type: y"}}, item.ReplayInvalid, "still invalid: event 0: id: x; and 1 more"},
		{reingested{}, item.ReplayInvalid, "still invalid: record: holds no event"},
	}
	for _, c := range cases {
		v := judge(c.in)
		if v.state != c.state || v.outcome != c.want || v.events != c.in.Events {
			t.Errorf("judge(%+v) = %+v, want %s %q", c.in, v, c.state, c.want)
		}
	}
	long := judge(reingested{Invalid: []string{"body: " + strings.Repeat("é", 2000)}})
	if len(long.outcome) > maxOutcome || !utf8.ValidString(long.outcome) || !strings.HasSuffix(long.outcome, "…") {
		t.Errorf("a long outcome is %d bytes, valid UTF-8 %v", len(long.outcome), utf8.ValidString(long.outcome))
	}
}
