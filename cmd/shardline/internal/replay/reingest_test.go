package replay

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/shardline/shardline/internal/ingest"
	"github.com/shardline/shardline/internal/item"
	"github.com/shardline/shardline/internal/schema"
	"github.com/shardline/shardline/internal/tenant"
	"github.com/shardline/shardline/testkit/kpltest"
)

// quarantined is every record of the quarantine, as reingest takes them.
func (e *env) quarantined(t *testing.T) []Record {
	t.Helper()
	var recs []Record
	if err := Walk(context.Background(), e.direct, e.table, everything, func(r Record) error {
		recs = append(recs, r)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return recs
}

// describe names an origin in a failure's message.
func describe(o item.Origin) string {
	sub, index := "-", "-"
	if o.SubIndex != nil {
		sub = fmt.Sprint(*o.SubIndex)
	}
	if o.Index != nil {
		index = fmt.Sprint(*o.Index)
	}
	return fmt.Sprintf("seq %s sub %s index %s", o.SequenceNumber, sub, index)
}

// TestReingestKPL: the quarantine replay reads a quarantined sub-record
// (its bytes are the sub-record's own) as a plain record, de-aggregates a
// whole aggregate quarantined before ingest could read them, and keeps a
// corrupt aggregate refused with its "kpl:" reason.
func TestReingestKPL(t *testing.T) {
	e := newEnv(t)
	arrival := now.Add(-time.Second)
	big := func(id string) []byte { return event("orders", id, time.Time{}, 100_000) } // over the default 64 KiB limit, under 200,000
	agg := kpltest.Aggregate([]kpltest.Record{
		{PartitionKey: "p", Data: event("orders", "small", now.Add(-time.Minute), 0)},
		{PartitionKey: "p", Data: big("big-timeless")},
		{PartitionKey: "p", Data: []byte("[" + string(big("big-in-array")) + "]")},
	})
	kinesis(t, e.ingester(0, now), record(1, arrival, agg), record(2, arrival, kpltest.Magic))
	q := e.quarantined(t)
	if len(q) != 3 {
		t.Fatalf("%d records quarantined, want the two big sub-records and the magic-only record", len(q))
	}
	// An aggregate quarantined whole before ingest read aggregates: one
	// valid event, one too big, one not JSON.
	old := kpltest.Aggregate([]kpltest.Record{
		{PartitionKey: "p", Data: event("orders", "old-ok", now.Add(-time.Minute), 0)},
		{PartitionKey: "p", Data: big("old-big")},
		{PartitionKey: "p", Data: []byte("nope")},
	})
	q = append(q, Record{Raw: old, Whole: true, ReceivedAt: arrival, Reason: "body: is not JSON",
		Origin: item.Origin{StreamARN: streamARN, ShardID: "shardId-000000000001", SequenceNumber: "1234"}})
	got := reingest(context.Background(), e.ingester(200_000, now), q, false)
	for i, r := range got {
		o := q[i].Origin
		var want reingested
		switch {
		case o.SubIndex != nil: // a big sub-record, or the big event of the sub-record's array
			want = reingested{Events: 1}
		case o.SequenceNumber == "1234":
			want = reingested{Events: 2, Invalid: []string{`sub-record 2: data: is not JSON`}}
		default:
			want = reingested{Invalid: []string{q[i].Reason}}
		}
		if r.Err != nil || r.Events != want.Events || len(r.Invalid) != len(want.Invalid) ||
			(len(want.Invalid) > 0 && !strings.HasPrefix(r.Invalid[0], want.Invalid[0])) {
			t.Errorf("%s (%s): got %+v, want %+v", describe(o), q[i].Reason, r, want)
		}
		if o.SequenceNumber != "1234" && o.SubIndex == nil && !strings.HasPrefix(q[i].Reason, "kpl: ") {
			t.Errorf("magic-only record quarantined for %q", q[i].Reason)
		}
	}
	ids := map[string]string{}
	for k, it := range e.scan(t) {
		if !strings.HasPrefix(k, "E#") {
			continue
		}
		var ev map[string]any
		if err := json.Unmarshal([]byte(schema.S(it[schema.Event])), &ev); err != nil {
			t.Fatal(err)
		}
		ids[ev["id"].(string)], _ = ev["time"].(string)
	}
	for _, id := range []string{"small", "big-timeless", "big-in-array", "old-ok", "old-big"} {
		if _, ok := ids[id]; !ok {
			t.Errorf("event %s not stored; stored: %v", id, ids)
		}
	}
	if len(ids) != 5 {
		t.Errorf("%d events stored, want 5: %v", len(ids), ids)
	}
	// Stamped with the aggregate's arrival, as first ingest would have.
	if got := ids["big-timeless"]; got != arrival.Format(time.RFC3339Nano) {
		t.Errorf("big-timeless stamped %s", got)
	}
}

// teamAStream is team-a's own stream in TestReingestChecksTenantsAgain.
const teamAStream = "arn:aws:kinesis:us-east-1:000000000000:stream/tenant-team-a"

// TestReingestChecksTenantsAgain: what team-a's own stream quarantined as
// not team-a's, a replay with the tenants refuses again, and one without
// them cannot check and refuses too; neither writes.
func TestReingestChecksTenantsAgain(t *testing.T) {
	e := newEnv(t)
	env := map[string]string{
		tenant.EnvTenants: `{"team-a": {"sources": ["team-a/", "urn:a:"], "stream": true}, "team-b": {"sources": ["team-b/"]}, "v1": {"sources": ["v1/"]}}`,
		tenant.EnvStreams: `{"team-a": "` + teamAStream + `"}`,
	}
	tenants, err := tenant.FromEnv(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	cfg := ingest.DefaultConfig(e.table)
	cfg.Tenants = tenants
	h := ingest.New(cfg, e.proxied, ingest.Options{Now: func() time.Time { return now }})
	onA := func(seq int, data string) events.KinesisEventRecord {
		rec := record(seq, now.Add(-time.Second), []byte(data))
		rec.EventSourceArn = teamAStream
		return rec
	}
	a := func(id, source string) string { return string(event(source, id, now.Add(-time.Minute), 0)) }
	kinesis(t, h, onA(1, a("a-1", "team-a/x")), onA(2, a("b-1", "team-b/x")), onA(3, "["+a("a-2", "urn:a:y")+","+a("v-1", "v1/z")+"]"))
	recs := e.quarantined(t)
	if len(recs) != 2 {
		t.Fatalf("%d records quarantined, want b-1 and v-1", len(recs))
	}
	writes := e.proxy.Count("BatchWriteItem")
	for i, r := range reingest(context.Background(), h, recs, false) {
		if r.Events != 0 || len(r.Invalid) != 1 || !strings.HasPrefix(r.Invalid[0], "tenant: ") {
			t.Errorf("replay of record %d: %+v", i, r)
		}
	}
	for i, r := range reingest(context.Background(), e.ingester(0, now), recs, false) {
		if r.Events != 0 || len(r.Invalid) != 1 || !strings.Contains(r.Invalid[0], "does not declare") {
			t.Errorf("replay without tenants of record %d: %+v", i, r)
		}
	}
	if n := e.proxy.Count("BatchWriteItem") - writes; n != 0 {
		t.Errorf("the replays made %d writes", n)
	}
}
