package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// TestHeatsimDocIsCurrent: the ramp tables and raise listings in
// docs/heatsim.md are what `heatsim -ramp -markdown` prints
// today, for both ramps; a policy change that moves them fails here until
// the doc is regenerated.
func TestHeatsimDocIsCurrent(t *testing.T) {
	doc, err := os.ReadFile("../../../docs/heatsim.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"-ramp", "-markdown"}, {"-ramp", "-exponential", "-markdown"}} {
		var out, errs bytes.Buffer
		if err := heat(args, &out, &errs); err != nil {
			t.Fatalf("heatsim %v: %v %s", args, err, errs.String())
		}
		s := out.String()
		i := strings.Index(s, "| design |")
		if i < 0 {
			t.Fatalf("heatsim %v printed no table:\n%s", args, s)
		}
		tables := strings.TrimSpace(s[i:])
		if !strings.Contains(string(doc), tables) {
			t.Errorf("docs/heatsim.md does not show what heatsim %v prints; regenerate it:\n%s", args, tables)
		}
	}
}
