package replay

import (
	"fmt"
	"unicode/utf8"

	"github.com/shardline/shardline/internal/item"
	"github.com/shardline/shardline/ops/plural"
)

// maxOutcome bounds an outcome's bytes: a reason quotes input (a JSON
// syntax error, a time as sent), and the mark must stay small.
const maxOutcome = 1024

// verdict is what a check found a record to be: the state and outcome to
// mark it with.
type verdict struct {
	state   item.ReplayState
	outcome string
	events  int
}

// judge words what reingest made of a record.
func judge(r reingested) verdict {
	if r.Events == 0 {
		return invalid(r.Invalid...)
	}
	o := fmt.Sprintf("stored: %d %s", r.Events, plural.Of(r.Events, "event", "events"))
	if len(r.Invalid) > 0 {
		// A JSON array whose events are not all valid: the valid ones are
		// stored, as first ingest would have; the others stay in the
		// record's bytes, and the outcome says why.
		o += fmt.Sprintf("; still invalid: %d (%s)", len(r.Invalid), summarise(r.Invalid))
	}
	return verdict{state: item.ReplayStored, outcome: clip(o), events: r.Events}
}

// invalid is the verdict on a record still refused for reasons.
func invalid(reasons ...string) verdict {
	if len(reasons) == 0 {
		reasons = []string{"record: holds no event"}
	}
	return verdict{state: item.ReplayInvalid, outcome: clip("still invalid: " + summarise(reasons))}
}

// truncated is the verdict on a record the quarantine could not keep whole.
func truncated(rec Record) verdict {
	return invalid(fmt.Sprintf("record: the quarantine kept only its first %d bytes (it was too long for an item even "+
		"compressed), so it cannot be checked again; recover it from its origin", len(rec.Raw)))
}

// summarise is the first reason, and how many more there are.
func summarise(reasons []string) string {
	s := reasons[0]
	if n := len(reasons) - 1; n > 0 {
		s += fmt.Sprintf("; and %d more", n)
	}
	return s
}

// clip cuts s to maxOutcome bytes, on a character boundary.
func clip(s string) string {
	if len(s) <= maxOutcome {
		return s
	}
	cut := maxOutcome - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
