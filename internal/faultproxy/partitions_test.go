package faultproxy

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"
)

func item(pk, gpk string) map[string]json.RawMessage {
	return map[string]json.RawMessage{
		"pk":  json.RawMessage(fmt.Sprintf(`{"S":%q}`, pk)),
		"gpk": json.RawMessage(fmt.Sprintf(`{"S":%q}`, gpk)),
		"e":   json.RawMessage(`{"S":"x"}`),
	}
}

// TestPartitionsThrottleOnlyTheKeyOverItsCeiling: a key over its ceiling
// refuses what passes it, other keys write on, a GSI key over its ceiling
// refuses for the table too, and a second later the key takes writes again.
func TestPartitionsThrottleOnlyTheKeyOverItsCeiling(t *testing.T) {
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	m := &Partitions{WCU: 10, Keys: []string{"pk", "gpk"}, Now: func() time.Time { return now }}
	held := 0
	for i := range 25 {
		if m.take(item("hot", fmt.Sprintf("g%d", i))) {
			held++
		}
	}
	if held != 15 {
		t.Fatalf("%d of 25 writes to one key held, want 15 over its 10", held)
	}
	if m.take(item("cold", "g-other")) {
		t.Fatal("a write to a cold key was held")
	}
	for i := range 10 {
		m.take(item(fmt.Sprintf("k%d", i), "g-hot"))
	}
	if !m.take(item("k-new", "g-hot")) {
		t.Fatal("a write over its GSI key's ceiling was not held")
	}
	now = now.Add(time.Second)
	if m.take(item("hot", "g-later")) {
		t.Fatal("the key was still throttled a second later")
	}
	if hot := m.Hot(); hot["pk=hot"] != 15 || hot["gpk=g-hot"] != 1 || len(hot) != 2 {
		t.Fatalf("Hot() = %v", hot)
	}
	if m.Seen.Load() != 38 || m.Throttled.Load() != 16 {
		t.Fatalf("seen %d throttled %d", m.Seen.Load(), m.Throttled.Load())
	}
}
