package counts_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/shardline/shardline/internal/counts"
	"github.com/shardline/shardline/internal/emf"
	"github.com/shardline/shardline/testkit/simtime"
	"github.com/shardline/shardline/testkit/testddb"
)

// TestFoldFunction: the scheduled fold as the stack's rule invokes it (an
// EventBridge "Scheduled Event"), configured from its environment, on a
// virtual clock two minutes into the hour: it folds the links, rolls the
// hours that ended up, says so in its metrics, and the counts read exact.
func TestFoldFunction(t *testing.T) {
	e, recs := sharedMixed(t)
	link(t, e.chain(t, testddb.Endpoint(t)), recs, 50, 1)
	env := map[string]string{counts.EnvTable: e.table, counts.EnvBuckets: "4"}
	cfg, err := counts.FoldConfigFromEnv(func(k string) string { return env[k] })
	if err != nil || cfg.Buckets != 4 {
		t.Fatalf("config %+v, %v", cfg, err)
	}
	simtime.Run(t, now.Truncate(time.Hour).Add(counts.RollupAfter), func(t *testing.T, clock *simtime.Clock) {
		var metrics bytes.Buffer
		f := counts.NewFold(cfg, clock.Client(testddb.Endpoint(t), 5*time.Millisecond), counts.Options{Metrics: emf.New(&metrics, counts.FoldDimensions())})
		f.LSM.Now = clock.Now
		ev := events.EventBridgeEvent{DetailType: "Scheduled Event", Source: "aws.events", Time: clock.Now()}
		if err := f.Invoke(context.Background(), ev); err != nil {
			t.Fatal(err)
		}
		m := metrics.String()
		if !strings.Contains(m, `"FoldRuns":1`) || strings.Contains(m, `"RolledItems":0`) || !strings.Contains(m, `"Function":"countfold"`) {
			t.Errorf("metrics: %s", m)
		}
		e.checkLSM(t, f.LSM, "s0", "s1", "s2")
	})
	for _, bad := range []string{"0", "x", "4097"} {
		env[counts.EnvBuckets] = bad
		if _, err := counts.FoldConfigFromEnv(func(k string) string { return env[k] }); err == nil || !strings.Contains(err.Error(), counts.EnvBuckets) {
			t.Errorf("%s=%s: %v", counts.EnvBuckets, bad, err)
		}
	}
}
