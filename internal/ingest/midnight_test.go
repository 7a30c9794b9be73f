package ingest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/shardline/shardline/internal/query"
	"github.com/shardline/shardline/internal/schema"
	"github.com/shardline/shardline/pkg/bucketing"
	"github.com/shardline/shardline/testkit/faultproxy"
	"github.com/shardline/shardline/testkit/simtime"
	"github.com/shardline/shardline/testkit/testddb"
)

// TestMidnightStartOfManySources: 1,000 sources start a UTC day within a
// minute, through four ingest containers fed by four Kinesis shards, on
// the partition model with every write metered (docs/keys.md). That is
// shardline's claim of 100,000 sources starting a day within 60 seconds,
// a hundred times smaller, on keys whose ceiling is a hundred times
// smaller: each key takes what it would at life size. Each source then
// writes an event every 10 seconds (a hundredth of the 10 events/s of a
// million events/s over 100,000 sources). One record in 50 is invalid and
// is quarantined: 2 a second, 200 at life size.
//
// No batch fails, no bookkeeping key (shard records and hour indexes,
// the catalogue, the quarantine) is throttled, every event is stored
// once, and GET /v1/sources lists every source. The test logs each key
// space's busiest key. It runs on the simulation's virtual clock
// (sim_test.go): the keys see the claim's traffic however slow the machine.
func TestMidnightStartOfManySources(t *testing.T) {
	t.Parallel()
	const (
		scale      = 100.0
		sources    = 1000
		containers = 4
		startFor   = time.Minute      // every source starts within it
		every      = 10 * time.Second // then writes this often
		runFor     = startFor + every // simulated
		window     = time.Second      // what a turn delivers: the mapping's batching window
		batch      = 500
		invoke     = time.Minute
	)
	midnight := time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)
	table := testddb.Table(t)
	endpoint := testddb.Endpoint(t)
	proxy := faultproxy.For(t, endpoint)
	simtime.Run(t, midnight, func(t *testing.T, clk *simtime.Clock) {
		model := &faultproxy.Partitions{Scale: scale, Keys: []string{schema.PK, schema.GSIPK}, Now: clk.Seen}
		proxy.SetRule(model.Rule())

		// Containers as deployed (only the model's ceiling is scaled: no
		// adaptive raise is at stake), each with its own client, registry
		// and caches.
		queues := fleet(containers, DefaultConfig(table), clk, proxy.URL, func() Options { return Options{Now: clk.Now} })
		// The plan: source i starts at a time spread over the minute, on the
		// shard its name hashes to, and writes every 10 s from then on.
		var plan []rampEvent
		names := make([]string, sources)
		for i := range sources {
			names[i] = fmt.Sprintf("tenant-%03d/app#%d", i, i%7)
			first := startFor * time.Duration(i*7919%sources) / sources
			for at, n := first, 0; at < runFor; at, n = at+every, n+1 {
				id := fmt.Sprintf("%d", n)
				if (i+n)%50 == 0 {
					id = "" // invalid: quarantined
				}
				plan = append(plan, rampEvent{id: id, at: midnight.Add(at), source: names[i]})
			}
		}
		sortByTime(plan)
		queueOf := func(src string) *shardQueue { return queues[bucketing.Hash(src, "")%containers] }

		// Each turn delivers what arrived in the window before it, every
		// container at once, as the mapping's batching window does.
		want := map[[2]string]bool{}
		bad, next := 0, 0
		var delivered atomic.Int64
		for {
			now := clk.Now()
			for ; next < len(plan) && !plan[next].at.After(now); next++ {
				e := plan[next]
				queueOf(e.source).push(e)
				if e.id == "" {
					bad++
				} else {
					want[[2]string{e.source, e.id}] = true
				}
			}
			n, _ := waiting(queues)
			if next == len(plan) && n == 0 {
				break
			}
			if at := now.Sub(midnight); at > 10*runFor {
				t.Fatalf("%d records still waiting at %v", n, at)
			}
			var wg sync.WaitGroup
			for _, q := range queues {
				wg.Go(func() { delivered.Add(int64(q.deliver(t, "", batch, invoke))) })
			}
			wg.Wait()
			time.Sleep(window - clk.Now().Sub(now)%window)
		}

		// No batch failed: every record was delivered once, none again.
		if n := int(delivered.Load()); n != len(plan) {
			t.Errorf("%d records delivered for %d sent: %d delivered again after a failure", n, len(plan), n-len(plan))
		}
		// No bookkeeping key was throttled.
		ceiling := model.Ceiling()
		for _, sp := range model.Report() {
			t.Logf("%-6s %5d keys, %6d writes, %4d refused; busiest %s: %.0f units in a second (%.0f%% of the ceiling)",
				sp.Space, sp.Keys, sp.Writes, sp.Refused, sp.Peak.Key, sp.Peak.Peak, 100*sp.Peak.Peak/ceiling)
			switch sp.Space {
			case "pk=M", "pk=S", "pk=Q":
				if sp.Refused > 0 {
					t.Errorf("%s: %d writes refused, on %d keys: %+v", sp.Space, sp.Refused, len(sp.Hot), sp.Hot[:min(3, len(sp.Hot))])
				}
			}
		}
		cat := model.Space("pk=S")
		if cat.Keys != bucketing.CatalogShards || cat.Writes != sources {
			t.Errorf("catalogue: %d writes to %d keys, want %d to %d", cat.Writes, cat.Keys, sources, bucketing.CatalogShards)
		}
		avg := float64(cat.Writes) / float64(cat.Keys) / startFor.Seconds()
		t.Logf("%d sources started, %.2f catalogue writes/s a key (%.0f%% of the ceiling)", sources, avg, 100*avg/ceiling)

		// Every event stored once, every invalid record quarantined once.
		c := clk.Client(endpoint, 0)
		e := &env{table: table, client: c}
		e.assertExactlyOnce(t, want, bad)

		// GET /v1/sources lists every source, paged.
		qh := query.New(query.Config{Table: table}, c, query.Options{Now: clk.Now})
		listed := map[string]int{}
		q := url.Values{"from": {midnight.Format(time.RFC3339)}, "to": {midnight.Add(time.Hour).Format(time.RFC3339)}, "limit": {"400"}}
		for pages := 0; ; pages++ {
			req := events.APIGatewayV2HTTPRequest{Version: "2.0", RawPath: query.SourcesRoute, RawQueryString: q.Encode()}
			req.RequestContext.HTTP.Method = "GET"
			resp, err := qh.HTTP(context.Background(), req)
			if err != nil || resp.StatusCode != 200 {
				t.Fatalf("GET /v1/sources: %v %d %s", err, resp.StatusCode, resp.Body)
			}
			var page struct {
				Sources []struct {
					Source string   `json:"source"`
					Days   []string `json:"days"`
				} `json:"sources"`
				NextCursor string `json:"next_cursor"`
			}
			if err := json.Unmarshal([]byte(resp.Body), &page); err != nil {
				t.Fatal(err)
			}
			for _, s := range page.Sources {
				listed[s.Source]++
			}
			if page.NextCursor == "" || pages > sources {
				break
			}
			q.Set("cursor", page.NextCursor)
		}
		for _, n := range names {
			if listed[n] != 1 {
				t.Errorf("source %q listed %d times", n, listed[n])
			}
		}
		if len(listed) != sources {
			t.Errorf("%d sources listed, want %d", len(listed), sources)
		}
	})
}

// sortByTime orders a plan by time, stably.
func sortByTime(plan []rampEvent) {
	sort.SliceStable(plan, func(i, j int) bool { return plan[i].at.Before(plan[j].at) })
}
