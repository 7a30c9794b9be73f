package replay

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shardline/shardline/testkit/faultproxy"
)

// Times of the mix's records.
var (
	arrival1 = now.Add(-10 * time.Minute) // seq 1, a time-less event
	arrival4 = now.Add(-7 * time.Minute)
	received = now.Add(-5 * time.Minute) // req-1
	future   = now.Add(30 * time.Minute) // the time of bin-future, ahead at first ingest
)

// quarantineMix sends, through the ingest function with the default
// MAX_EVENT_BYTES (64 KiB), records that end up in the quarantine:
//
//	seq 1          a 100,000-byte event without time          valid at 200,000
//	seq 2          not JSON                                   never valid
//	seq 3          an id of 300 bytes                         never valid
//	seq 4#0        a 90,000-byte event in an array            valid at 200,000
//	req-1#1        an 80,000-byte event without time, in an API array   valid at 200,000
//	req-1#2        a type of 300 bytes, in the same array     never valid
//	bin-pct        binary mode, ce-id "100%" not decodable    never valid
//	bin-future     binary mode, ce-time 30 minutes ahead      valid an hour later
//
// and the events that were valid (small s1, api a0) are stored.
func quarantineMix(t *testing.T, e *env) {
	t.Helper()
	h := e.ingester(0, now)
	long := strings.Repeat("i", 300)
	kinesis(t, h,
		record(1, arrival1, event("big", "b1", time.Time{}, 100_000)),
		record(2, now.Add(-9*time.Minute), []byte(`{"id":"x"`)),
		record(3, now.Add(-8*time.Minute), event("big", long, now.Add(-time.Hour), 100)),
		record(4, arrival4, []byte("["+string(event("big", "b2", now.Add(-2*time.Hour), 90_000))+","+
			string(event("small", "s1", now.Add(-2*time.Hour), 100))+"]")),
	)
	arr := fmt.Sprintf(`[%s,%s,{"specversion":"1.0","id":"a2","source":"api","type":"%s"}]`,
		event("api", "a0", now.Add(-time.Hour), 100), event("api", "a1", time.Time{}, 80_000), long)
	if code := post(t, h, "req-1", received, arr, nil); code != 202 {
		t.Fatalf("req-1: %d", code)
	}
	ce := map[string]string{"ce-specversion": "1.0", "ce-source": "bin", "ce-type": "t", "content-type": "text/plain"}
	pct := map[string]string{"ce-id": "100%"}
	ahead := map[string]string{"ce-id": "f1", "ce-time": future.Format(time.RFC3339)}
	for k, v := range ce {
		pct[k], ahead[k] = v, v
	}
	if code := post(t, h, "bin-pct", now.Add(-4*time.Minute), "x", pct); code != 400 {
		t.Fatalf("bin-pct: %d", code)
	}
	if code := post(t, h, "bin-future", now.Add(-3*time.Minute), "x", ahead); code != 400 {
		t.Fatalf("bin-future: %d", code)
	}
	if n := e.count(t, "Q#"); n != 8 {
		t.Fatalf("%d records quarantined, want 8", n)
	}
}

var everything = Range{From: now.Add(-24 * time.Hour), To: replayAt}

// TestReplayAfterLimitRaised: after MAX_EVENT_BYTES is raised, a replay
// stores the events that are valid now, once, time-less ones at the time
// first ingest would have given them; the others stay quarantined with
// their outcome; GET /v1/quarantine shows the marks; and a second replay
// writes nothing.
func TestReplayAfterLimitRaised(t *testing.T) {
	e := newEnv(t)
	quarantineMix(t, e)
	sum, err := e.replayer(200_000).Run(context.Background(), Options{Range: everything})
	if err != nil {
		t.Fatal(err)
	}
	want := Summary{Read: 8, Checked: 8, NowValid: 4, Events: 4, StillInvalid: 4, Last: sum.Last}
	if sum != want {
		t.Fatalf("summary %+v, want %+v", sum, want)
	}

	// The events, read back through the query function's reader.
	all := func(source string) []map[string]any {
		return e.storedEvents(t, source, now.Add(-24*time.Hour), replayAt)
	}
	ids := func(evs []map[string]any) string {
		var s []string
		for _, ev := range evs {
			s = append(s, fmt.Sprintf("%s@%s", ev["id"], ev["time"]))
		}
		return strings.Join(s, " ")
	}
	for source, want := range map[string]string{
		// b1 had no time: it gets its record's arrival, as at first ingest.
		"big":   fmt.Sprintf("b2@%s b1@%s", now.Add(-2*time.Hour).Format(time.RFC3339), arrival1.Format(time.RFC3339)),
		"small": fmt.Sprintf("s1@%s", now.Add(-2*time.Hour).Format(time.RFC3339)),
		// a1 had no time: it gets the request's.
		"api": fmt.Sprintf("a0@%s a1@%s", now.Add(-time.Hour).Format(time.RFC3339), received.Format(time.RFC3339)),
		"bin": fmt.Sprintf("f1@%s", future.Format(time.RFC3339)),
	} {
		if got := ids(all(source)); got != want {
			t.Errorf("%s: %s, want %s", source, got, want)
		}
	}
	if n := e.count(t, "E#"); n != 6 {
		t.Errorf("%d event items, want 6", n)
	}

	marks := e.marks(t)
	wantMarks := map[string]string{
		"seq 1":      "stored | stored: 1 event",
		"seq 2":      "invalid | still invalid: data: is not JSON",
		"seq 3":      "invalid | still invalid: id: is 300 bytes; the limit is 256",
		"seq 4#0":    "stored | stored: 1 event",
		"req-1#1":    "stored | stored: 1 event",
		"req-1#2":    "invalid | still invalid: type: is 300 bytes; the limit is 256",
		"bin-pct":    "invalid | still invalid: ce-id: is not valid percent-encoding",
		"bin-future": "stored | stored: 1 event",
	}
	if !reflect.DeepEqual(keys(marks), keys(wantMarks)) {
		t.Fatalf("records %v, want %v", keys(marks), keys(wantMarks))
	}
	for k, w := range wantMarks {
		if !strings.HasPrefix(marks[k], w) {
			t.Errorf("%s: %q, want %q...", k, marks[k], w)
		}
	}
	for _, r := range e.listQuarantine(t, everything.From, everything.To) {
		if r.Replay == nil || r.Replay.At != replayAt.Format(time.RFC3339Nano) || r.Raw == nil || r.Reason == "" {
			t.Errorf("record %+v: want its fields and a replay at %s", r, replayAt)
		}
	}

	// Again: nothing to do, nothing written.
	before, writes := e.scan(t), e.writes()
	sum, err = e.replayer(200_000).Run(context.Background(), Options{Range: everything})
	if err != nil {
		t.Fatal(err)
	}
	want = Summary{Read: 8, Checked: 4, StillInvalid: 4, Unchanged: 4, AlreadyReplayed: 4, Last: sum.Last}
	if sum != want {
		t.Fatalf("second replay: %+v, want %+v", sum, want)
	}
	if n := e.writes() - writes; n != 0 {
		t.Errorf("the second replay made %d write requests", n)
	}
	if after := e.scan(t); !reflect.DeepEqual(before, after) {
		t.Errorf("the second replay changed the table")
	}
}

// TestDryRunWritesNothing: a dry run reports what a replay will do, and
// writes nothing: no event, no mark, no shard record or hour index.
func TestDryRunWritesNothing(t *testing.T) {
	e := newEnv(t)
	quarantineMix(t, e)
	before, writes := e.scan(t), e.writes()
	var listed []Result
	var log bytes.Buffer
	r := e.replayer(200_000)
	r.Log = slog.New(slog.NewTextHandler(&log, nil))
	dry, err := r.Run(context.Background(), Options{Range: everything, DryRun: true, ProgressRecords: 1,
		OnRecord: func(r Result) { listed = append(listed, r) }})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), "msg=\"replay progress\" read=8 checked=8 now_valid=4 events=4 still_invalid=4") {
		t.Errorf("progress: %s", log.String())
	}
	if n := e.writes() - writes; n != 0 {
		t.Errorf("the dry run made %d write requests", n)
	}
	if after := e.scan(t); !reflect.DeepEqual(before, after) {
		t.Errorf("the dry run changed the table")
	}
	if len(listed) != 8 {
		t.Errorf("the dry run listed %d records, want 8", len(listed))
	}
	real, err := e.replayer(200_000).Run(context.Background(), Options{Range: everything})
	if err != nil {
		t.Fatal(err)
	}
	if dry != real {
		t.Errorf("dry run %+v, replay %+v", dry, real)
	}
}

// TestReasonFilters: --reason replays only the records whose reason
// begins with it; the others stay unmarked for a later replay.
func TestReasonFilters(t *testing.T) {
	e := newEnv(t)
	quarantineMix(t, e)
	sum, err := e.replayer(200_000).Run(context.Background(), Options{Range: Range{From: everything.From, To: everything.To, Reason: "event: is "}})
	if err != nil {
		t.Fatal(err)
	}
	want := Summary{Read: 8, Filtered: 5, Checked: 3, NowValid: 3, Events: 3, Last: sum.Last}
	if sum != want {
		t.Fatalf("summary %+v, want %+v", sum, want)
	}
	marked := 0
	for k, m := range e.marks(t) {
		if m != "" {
			marked++
			if k != "seq 1" && k != "seq 4#0" && k != "req-1#1" {
				t.Errorf("%s was marked: %s", k, m)
			}
		}
	}
	if marked != 3 {
		t.Errorf("%d records marked, want 3", marked)
	}
	sum, err = e.replayer(200_000).Run(context.Background(), Options{Range: everything})
	if err != nil || sum.AlreadyReplayed != 3 || sum.NowValid != 1 || sum.StillInvalid != 4 {
		t.Fatalf("the full replay after: %+v %v", sum, err)
	}
}

// TestRecheckedUntilValid: a record still invalid is checked again by each
// replay, written only when its outcome changes, and stored once when it
// becomes valid.
func TestRecheckedUntilValid(t *testing.T) {
	e := newEnv(t)
	kinesis(t, e.ingester(0, now), record(1, arrival1, event("big", "b1", time.Time{}, 100_000)))
	rg := Range{From: now.Add(-time.Hour), To: now}
	steps := []struct {
		maxBytes int
		mark     string
		writes   bool
	}{
		{80_000, "invalid | still invalid: event: is 100", true}, // a new reason: the limit is 80000 now
		{80_000, "invalid | still invalid: event: is 100", false},
		{200_000, "stored | stored: 1 event", true},
		{200_000, "stored | stored: 1 event", false},
		{80_000, "stored | stored: 1 event", false}, // lowered again: stored stays stored
	}
	for i, s := range steps {
		w := e.writes()
		if _, err := e.replayer(s.maxBytes).Run(context.Background(), Options{Range: rg}); err != nil {
			t.Fatal(err)
		}
		m := e.marks(t)["seq 1"]
		if !strings.HasPrefix(m, s.mark) || (e.writes() > w) != s.writes {
			t.Fatalf("step %d: mark %q, wrote %v; want %q, %v", i, m, e.writes() > w, s.mark, s.writes)
		}
		if i == 0 && !strings.Contains(m, "the limit is 80000") {
			t.Fatalf("step 0: %q does not give the new limit", m)
		}
	}
	if got := e.storedEvents(t, "big", rg.From, rg.To); len(got) != 1 || got[0]["time"] != arrival1.Format(time.RFC3339) {
		t.Fatalf("stored %v", got)
	}
}

// TestInterruptedReplayRunsAgain: events stored by a replay that stopped
// before marking (a crash, Ctrl-C) are stored again by the next, onto the
// same items, at the same time; and two replays at once mark each record
// stored exactly once.
func TestInterruptedReplayRunsAgain(t *testing.T) {
	e := newEnv(t)
	quarantineMix(t, e)
	// The first run stores and is cut off before it marks.
	var recs []Record
	err := Walk(context.Background(), e.direct, e.table, everything, func(r Record) error {
		recs = append(recs, r)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	stored := 0
	for _, r := range reingest(context.Background(), e.ingester(200_000, replayAt), recs, false) {
		stored += r.Events
	}
	if stored != 4 || e.count(t, "E#") != 6 {
		t.Fatalf("the cut-off run stored %d, the table holds %d events", stored, e.count(t, "E#"))
	}
	eventsBefore := e.storedEvents(t, "big", everything.From, everything.To)

	// Two replays at once: each record is marked stored by one of them.
	var wg sync.WaitGroup
	sums := make([]Summary, 2)
	errs := make([]error, 2)
	for i := range sums {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sums[i], errs[i] = e.replayer(200_000).Run(context.Background(), Options{Range: everything})
		}()
	}
	wg.Wait()
	if errs[0] != nil || errs[1] != nil {
		t.Fatal(errs)
	}
	if n := sums[0].NowValid + sums[1].NowValid; n != 4 {
		t.Errorf("records marked stored: %d, want 4 (%+v %+v)", n, sums[0], sums[1])
	}
	if n := e.count(t, "E#"); n != 6 {
		t.Errorf("%d event items, want 6", n)
	}
	if got := e.storedEvents(t, "big", everything.From, everything.To); !reflect.DeepEqual(got, eventsBefore) {
		t.Errorf("events changed: %v, were %v", got, eventsBefore)
	}
}

// TestStorageFailureLeavesRecordsForTheNextRun: when storage refuses the
// writes for now, no record is marked stored and the run fails, saying to
// run it again; the next run, once storage is back, stores them.
func TestStorageFailureLeavesRecordsForTheNextRun(t *testing.T) {
	e := newEnv(t)
	quarantineMix(t, e)
	e.proxy.SetRule(func(r faultproxy.Request) (*faultproxy.Fault, faultproxy.Hold) {
		if r.Op == "BatchWriteItem" {
			return faultproxy.Throttled, nil
		}
		return nil, nil
	})
	sum, err := e.replayer(200_000).Run(context.Background(), Options{Range: everything, BatchTimeout: 300 * time.Millisecond})
	if err == nil || !strings.Contains(err.Error(), "4 records could not be stored or marked for now") ||
		!strings.Contains(err.Error(), "run the same command again") {
		t.Fatalf("error %v", err)
	}
	if sum.Failed != 4 || sum.NowValid != 0 || sum.StillInvalid != 4 {
		t.Fatalf("summary %+v", sum)
	}
	for k, m := range e.marks(t) {
		if strings.HasPrefix(m, "stored") {
			t.Errorf("%s marked %s without its events stored", k, m)
		}
	}
	e.proxy.SetRule(nil)
	sum, err = e.replayer(200_000).Run(context.Background(), Options{Range: everything})
	if err != nil || sum.NowValid != 4 || sum.Unchanged != 4 || e.count(t, "E#") != 6 {
		t.Fatalf("after recovery: %+v %v, %d events", sum, err, e.count(t, "E#"))
	}
}

// TestMissingTableStops: a failure no record can get past stops the run at
// once, naming the table.
func TestMissingTableStops(t *testing.T) {
	e := newEnv(t)
	r := e.replayer(0)
	r.Table = "no-such-table"
	_, err := r.Run(context.Background(), Options{Range: everything})
	if err == nil || !strings.Contains(err.Error(), "no-such-table") {
		t.Fatalf("error %v", err)
	}
}

// TestTruncatedRecordStaysQuarantined: a record longer than an item holds,
// even compressed, was kept truncated; replay cannot check it and says so.
func TestTruncatedRecordStaysQuarantined(t *testing.T) {
	e := newEnv(t)
	data := make([]byte, 1<<20) // random: incompressible, and not UTF-8
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	kinesis(t, e.ingester(0, now), record(1, arrival1, data))
	sum, err := e.replayer(200_000).Run(context.Background(), Options{Range: everything})
	if err != nil || sum.StillInvalid != 1 {
		t.Fatalf("%+v %v", sum, err)
	}
	if m := e.marks(t)["seq 1"]; !strings.Contains(m, "cannot be checked again") {
		t.Fatalf("mark %q", m)
	}
}

// TestRangeIsChecked: the range must be given and not empty.
func TestRangeIsChecked(t *testing.T) {
	e := newEnv(t)
	for _, rg := range []Range{{To: now}, {From: now, To: now}, {From: now, To: now.Add(-time.Second)}} {
		if _, err := e.replayer(0).Run(context.Background(), Options{Range: rg}); err == nil {
			t.Errorf("range %+v accepted", rg)
		}
	}
}
