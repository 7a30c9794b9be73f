package heatsim

import (
	"testing"
	"time"
)

var start = time.Date(2026, 11, 22, 11, 50, 0, 0, time.UTC) // crosses an hour boundary

// TestOneSourceAtFiftyThousand: one source at 50,000 events/s of 1 KB. The
// single key and the daily bucket throttle almost everything; the seed
// articles' 10 shards most of it; shardline with the advised counts
// nothing, on the table or the GSI; shardline without GSI shards is held
// back by its GSI.
func TestOneSourceAtFiftyThousand(t *testing.T) {
	a := Advise(50000, 1, 1)
	if a.Shards != 72 || a.GSIShards != 72 {
		t.Fatalf("advice %+v", a)
	}
	w := Workload{Sources: []Source{{Name: "fleet", Rate: 50000}}, Duration: 20 * time.Minute, Start: start, ItemKB: 1}
	rs := Run(w, Designs(10, a.Shards, a.GSIShards), 0)
	for _, r := range rs {
		t.Logf("%-40s hottest %6.2f  throttled %6.2f%%  GSI back-pressure %6.2f%%  GSI hottest %6.2f  reads %d",
			r.Design, r.HottestLoad, r.ThrottledPct, r.GSIThrottledPct, r.HottestGSILoad, r.ReadRequests)
	}
	byName := map[string]Result{}
	for _, r := range rs {
		byName[r.Design] = r
	}
	for _, d := range []string{"single key (EVENTS)", "daily bucket (EVENTS#day)"} {
		if r := byName[d]; r.ThrottledPct < 95 || r.HottestLoad < 45 {
			t.Errorf("%s: %+v, want nearly everything throttled", d, r)
		}
	}
	if r := byName["random suffix, 10 shards"]; r.ThrottledPct < 75 {
		t.Errorf("10 random shards: %+v", r)
	}
	advised := byName["shardline, 72 shards, 72 GSI shards"]
	if advised.ThrottledPct != 0 || advised.GSIThrottledPct != 0 || advised.HottestLoad > 1 || advised.HottestGSILoad > 1 {
		t.Errorf("shardline advised: %+v, want no throttling", advised)
	}
	if r := byName["shardline, 72 shards, 1 GSI shard"]; r.GSIThrottledPct < 95 || r.HottestLoad > 1 {
		t.Errorf("shardline without GSI shards: %+v, want the GSI to hold it back", r)
	}
	if a.Simulated.ThrottledPct != 0 {
		t.Errorf("advice simulated %+v", a.Simulated)
	}
}

// TestZipfWithBurst: a hundred Zipf-distributed sources and a burst to
// three times the previous peak: on-demand's headroom is twice the previous
// peak, so every design throttles during the burst, and only there.
func TestZipfWithBurst(t *testing.T) {
	srcs := Zipf(100, 1.1, 20000)
	if srcs[0].Rate <= srcs[1].Rate || srcs[99].Rate <= 0 {
		t.Fatalf("zipf %+v", srcs[:2])
	}
	w := Workload{Sources: srcs, Duration: 10 * time.Minute, Start: start, ItemKB: 1,
		BurstAt: 4 * time.Minute, BurstLength: time.Minute, BurstFactor: 3}
	a := Advise(srcs[0].Rate*3, 1, 1)
	rs := Run(w, Designs(10, a.Shards, a.GSIShards), 0)
	for _, r := range rs {
		t.Logf("%-40s hottest %6.2f  throttled %6.2f%%  GSI %6.2f%%", r.Design, r.HottestLoad, r.ThrottledPct, r.GSIThrottledPct)
	}
	last := rs[len(rs)-1]
	// The burst is a minute of 3x in ten; on-demand takes 2x of it, so a
	// third of the burst's 3.6M units of 14.4M is throttled: 8.3 %.
	if last.ThrottledPct < 8 || last.ThrottledPct > 8.7 || last.GSIThrottledPct > 0.1 {
		t.Errorf("shardline under a 3x burst: %+v, want only the burst's excess over 2x throttled", last)
	}
	if rs[0].ThrottledPct < 90 {
		t.Errorf("single key: %+v", rs[0])
	}
}

// TestSlowIsolation: when adaptive capacity takes a minute to isolate hot
// keys, shardline's hourly GSI keys, which land on partitions anew each
// hour, throttle briefly at the hour boundary; the advice says so.
func TestSlowIsolation(t *testing.T) {
	w := Workload{Sources: []Source{{Name: "fleet", Rate: 50000}}, Duration: 20 * time.Minute, Start: start, ItemKB: 1}
	rs := Run(w, Designs(10, 72, 72)[5:], time.Minute)
	if rs[0].ThrottledPct <= 0 || rs[0].ThrottledPct > 5 {
		t.Fatalf("%+v: want a brief throttle at the hour boundary and no more", rs[0])
	}
}

// TestSizeSplitsSetThePartitionFloor: a table holding 30 days of 50,000
// 1 KB events a second (about 130 TB) has far more partitions than its
// throughput needs; hashing then spreads keys thinner, and isolation has
// less to do, but one key value still cannot go past its ceiling.
func TestSizeSplitsSetThePartitionFloor(t *testing.T) {
	if n := newTable(50000, 30*86400*50000/1e6, 0).parts; n != 12960 {
		t.Fatalf("%d partitions, want 12,960 (size) rather than 100 (throughput)", n)
	}
	w := Workload{Sources: []Source{{Name: "fleet", Rate: 50000}}, Duration: 5 * time.Minute, Start: start, ItemKB: 1, StoredGB: 129600}
	rs := Run(w, Designs(10, 72, 72), 0)
	if rs[0].ThrottledPct < 95 || rs[5].ThrottledPct != 0 {
		t.Fatalf("single key %+v, shardline %+v", rs[0], rs[5])
	}
}
