package ingest

import (
	"fmt"
	"testing"
	"time"
)

// TestWarmHandlerManySources reuses one handler, as a warm container does,
// across many invocations whose batches span many (source, day) pairs. Once
// the shard-schedule cache is warm, lookups return at once and overlap the
// loop that starts them; a map written by those lookups while the loop ranges
// over it is a fatal error (not a recoverable panic) that takes the
// container down. Run under -race it also catches the unsynchronised access
// before it turns fatal.
//
// Four invocations: the first sets the 200 pairs up, the other three find
// them in the warm cache. The detector needs no more: with the lookups
// writing the map the loop ranges over (the bug, put back by hand), one
// invocation fails under -race; without -race, 60 invocations did not crash
// either, so more batches bought nothing but writes.
func TestWarmHandlerManySources(t *testing.T) {
	e := newEnv(t, false, nil)
	const (
		sources     = 40
		days        = 5 // 200 (source, day) pairs per batch
		invocations = 4
	)
	want := map[[2]string]bool{}
	for inv := range invocations {
		var payloads [][]byte
		for i := range sources * days {
			src := fmt.Sprintf("svc-%02d", i%sources)
			at := fixtureNow.Add(-time.Duration(i/sources)*24*time.Hour - time.Duration(inv)*time.Second)
			id := fmt.Sprintf("inv%d-%d", inv, i)
			payloads = append(payloads, eventJSON(src, id, at))
			want[[2]string{src, id}] = true
		}
		resp, err := e.h.Kinesis(invocation(t), kinesisBatch(payloads...))
		if err != nil {
			t.Fatalf("invocation %d: %v", inv, err)
		}
		if len(resp.BatchItemFailures) > 0 {
			t.Fatalf("invocation %d: %d records reported failed", inv, len(resp.BatchItemFailures))
		}
	}
	e.assertExactlyOnce(t, want, 0)
}
