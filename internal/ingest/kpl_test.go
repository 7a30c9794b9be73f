package ingest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/shardline/shardline/internal/item"
	"github.com/shardline/shardline/internal/schema"
	"github.com/shardline/shardline/testkit/faultproxy"
	"github.com/shardline/shardline/testkit/kpltest"
	"github.com/shardline/shardline/testkit/simtime"
)

// kplWant is what a batch of aggregates must leave in the table: each event
// once, and each quarantined sub-record or element once, by origin, with
// the bytes it must keep.
type kplWant struct {
	events      map[[2]string]bool
	quarantined map[string][]byte // "seq sub_index index" -> raw
	stamped     map[string]bool   // ids of events without time, which get the arrival time
}

func newKPLWant() *kplWant {
	return &kplWant{events: map[[2]string]bool{}, quarantined: map[string][]byte{}, stamped: map[string]bool{}}
}

func originName(o item.Origin) string {
	n := func(p *int) string {
		if p == nil {
			return "-"
		}
		return fmt.Sprint(*p)
	}
	return o.SequenceNumber + " " + n(o.SubIndex) + " " + n(o.Index)
}

// kplRecords is an aggregate's n sub-records, tagged with prefix: single
// events, JSON arrays of three, an event without time, and, past the first
// few, a sub-record that is not JSON and an array with one invalid event.
// It adds to w what the aggregate, delivered as record seq, must leave.
func kplRecords(w *kplWant, seq, prefix string, n int) []kpltest.Record {
	recs := make([]kpltest.Record, n)
	for k := range recs {
		src := []string{"orders", "iot/fleet-7", "auth #1"}[k%3]
		at := fixtureNow.Add(-time.Duration(k) * time.Second)
		ev := func(j int) []byte {
			id := fmt.Sprintf("%s-%d-%d", prefix, k, j)
			w.events[[2]string{src, id}] = true
			return eventJSON(src, id, at)
		}
		var data []byte
		switch {
		case k%50 == 7:
			data = []byte(fmt.Sprintf(`{"id":"%s-broken-%d"`, prefix, k))
			w.quarantined[fmt.Sprintf("%s %d -", seq, k)] = data
		case k%50 == 13:
			bad := []byte(fmt.Sprintf(`{"specversion":"1.0","id":"%s-notype-%d","source":"orders"}`, prefix, k))
			data = []byte("[" + string(ev(0)) + "," + string(bad) + "]")
			w.quarantined[fmt.Sprintf("%s %d 1", seq, k)] = bad
		case k%50 == 21:
			id := fmt.Sprintf("%s-%d-timeless", prefix, k)
			w.events[[2]string{src, id}] = true
			w.stamped[id] = true
			data, _ = json.Marshal(map[string]any{"specversion": "1.0", "id": id, "source": src, "type": "test.event"})
		case k%10 == 0:
			data = []byte("[" + string(ev(0)) + "," + string(ev(1)) + "," + string(ev(2)) + "]")
		default:
			data = ev(0)
		}
		recs[k] = kpltest.Record{PartitionKey: src, Data: data}
		if k%4 == 1 {
			recs[k].ExplicitHashKey = fmt.Sprint(k % 3)
		}
	}
	return recs
}

// assertKPL checks the table against w: every event once, events without
// time at the arrival time, every quarantined part once, with its bytes
// and origin.
func (e *env) assertKPL(t *testing.T, w *kplWant, arrival time.Time) {
	t.Helper()
	items := e.scan(t) // once for the three checks, not once each
	exactlyOnce(t, items, w.events, len(w.quarantined))
	for _, it := range withPrefix(items, "E#") {
		ev := storedEvent(t, it)
		if w.stamped[ev["id"].(string)] {
			if got := ev["time"]; got != arrival.Format(time.RFC3339Nano) {
				t.Errorf("event %s without time stamped %v, want the arrival %s", ev["id"], got, arrival.Format(time.RFC3339Nano))
			}
		}
	}
	for _, it := range withPrefix(items, "Q#") {
		o := item.OriginOf(it)
		want, ok := w.quarantined[originName(o)]
		raw, _, _ := item.RawOf(it)
		if !ok || !bytes.Equal(raw, want) {
			t.Errorf("quarantined %s (%q): raw %.80q, want %.80q", originName(o), s(it, schema.Reason), raw, want)
		}
	}
}

// TestKPLAggregatesStoredExactlyOnce: aggregates of 1, 2, 500 and 1,000
// sub-records, beside plain records in the same batch, are stored exactly
// once; invalid sub-records and array elements are quarantined with their
// sub_index, and nothing is reported. Delivered again, the batch adds
// nothing.
func TestKPLAggregatesStoredExactlyOnce(t *testing.T) {
	for _, n := range []int{1, 2, 500, 1000} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			e := newEnv(t, false, nil)
			w := newKPLWant()
			plain := eventJSON("orders", "plain-0", fixtureNow.Add(-time.Hour))
			w.events[[2]string{"orders", "plain-0"}] = true
			array := []byte("[" + string(eventJSON("billing", "plain-1", fixtureNow.Add(-time.Hour))) + "]")
			w.events[[2]string{"billing", "plain-1"}] = true
			batch := kinesisBatch(plain, nil, array)
			seq := batch.Records[1].Kinesis.SequenceNumber
			batch.Records[1].Kinesis.Data = kpltest.Aggregate(kplRecords(w, seq, "k", n))
			for round := range 2 {
				resp, err := e.h.Kinesis(invocation(t), batch)
				if err != nil || len(resp.BatchItemFailures) != 0 {
					t.Fatalf("round %d: %v, failures %v", round, err, resp.BatchItemFailures)
				}
				e.assertKPL(t, w, fixtureNow.Add(-time.Second))
			}
			if n >= 500 && len(w.quarantined) < 2*n/50 {
				t.Fatalf("only %d parts quarantined: the test does not cover invalid sub-records", len(w.quarantined))
			}
		})
	}
}

// TestKPLCorruptAggregatesQuarantinedWhole: an aggregate that cannot be
// read (a bad digest, truncated, garbage protobuf, magic bytes only, no
// records) or that fans out too far is quarantined whole, with its bytes
// and a reason beginning "kpl:", without a sub_index; it never fails the
// batch, and the valid records beside it are stored.
func TestKPLCorruptAggregatesQuarantinedWhole(t *testing.T) {
	good := kpltest.Aggregate([]kpltest.Record{{PartitionKey: "p", Data: eventJSON("orders", "in-bad-digest", fixtureNow)}})
	badDigest := bytes.Clone(good)
	badDigest[len(badDigest)-3] ^= 0x40
	tiny := func(i int) string { return fmt.Sprintf(`{"id":"t%d","source":"s","type":"t"}`, i) }
	var huge []kpltest.Record // 11 sub-records of 1,000 events: each within a record's limit, 11,000 in all
	for k := range MaxAggregateEvents/MaxRequestEvents + 1 {
		var b strings.Builder
		b.WriteByte('[')
		for j := range MaxRequestEvents {
			if j > 0 {
				b.WriteByte(',')
			}
			b.WriteString(tiny(k*MaxRequestEvents + j))
		}
		b.WriteByte(']')
		huge = append(huge, kpltest.Record{PartitionKey: "p", Data: []byte(b.String())})
	}
	corrupt := map[string][]byte{
		"bad digest":       badDigest,
		"truncated":        good[:len(good)-7],
		"garbage protobuf": kpltest.Wrap([]byte("\x1a\xff\xff\xff\x0fnot a protobuf")),
		"magic only":       kpltest.Magic,
		"no records":       kpltest.Wrap(nil),
		"too many events":  kpltest.Aggregate(huge),
	}
	e := newEnv(t, false, nil)
	payloads := [][]byte{eventJSON("orders", "ok-before", fixtureNow.Add(-time.Minute))}
	var names []string
	for name, data := range corrupt {
		names = append(names, name)
		payloads = append(payloads, data)
	}
	payloads = append(payloads, eventJSON("orders", "ok-after", fixtureNow.Add(-time.Minute)))
	batch := kinesisBatch(payloads...)
	for round := range 2 {
		resp, err := e.h.Kinesis(invocation(t), batch)
		if err != nil || len(resp.BatchItemFailures) != 0 {
			t.Fatalf("round %d: %v, failures %v", round, err, resp.BatchItemFailures)
		}
		e.assertExactlyOnce(t, map[[2]string]bool{{"orders", "ok-before"}: true, {"orders", "ok-after"}: true}, len(corrupt))
	}
	bySeq := map[string]map[string]types.AttributeValue{}
	for _, it := range e.itemsIn(t, "Q#") {
		bySeq[item.OriginOf(it).SequenceNumber] = it
	}
	for i, name := range names {
		rec := batch.Records[i+1].Kinesis
		it := bySeq[rec.SequenceNumber]
		o := item.OriginOf(it)
		raw, whole, _ := item.RawOf(it)
		reason := s(it, schema.Reason)
		if !strings.HasPrefix(reason, "kpl: ") || o.SubIndex != nil || o.Index != nil || !whole || !bytes.Equal(raw, rec.Data) {
			t.Errorf("%s: reason %q, origin %s, %d bytes kept (whole %v) of %d", name, reason, originName(o), len(raw), whole, len(rec.Data))
		}
		t.Logf("%s: %s", name, reason)
	}
}

// TestKPLTransientFailureReportsTheParentOnce: when some sub-records'
// events cannot be stored before the deadline, the aggregate is reported
// once by its sequence number, beside a plain record that failed the same
// way, and nothing else is; Lambda's redelivery of the reported records
// then stores the rest, and every event is stored exactly once.
func TestKPLTransientFailureReportsTheParentOnce(t *testing.T) {
	e := newSimEnv(t, true, nil)
	simtime.Run(t, fixtureNow, func(t *testing.T, clk *simtime.Clock) {
		e.on(t, clk, lag)
		e.proxy.SetRule(func(r faultproxy.Request) (*faultproxy.Fault, faultproxy.Hold) {
			return nil, faultproxy.PKHasPrefix("E#flaky#")
		})
		w := newKPLWant()
		event := func(src, id string) []byte {
			w.events[[2]string{src, id}] = true
			return eventJSON(src, id, fixtureNow.Add(-time.Minute))
		}
		mixed := make([]kpltest.Record, 500) // every seventh sub-record of a flaky source, one an array
		steady := make([]kpltest.Record, 50)
		for k := range mixed {
			src := "steady"
			if k%7 == 3 {
				src = "flaky"
			}
			mixed[k] = kpltest.Record{PartitionKey: src}
			if k == 10 {
				mixed[k].Data = []byte("[" + string(event("steady", "m-10a")) + "," + string(event("flaky", "m-10b")) + "]")
			} else {
				mixed[k].Data = event(src, fmt.Sprintf("m-%d", k))
			}
		}
		for k := range steady {
			steady[k] = kpltest.Record{PartitionKey: "steady", Data: event("steady", fmt.Sprintf("s-%d", k))}
		}
		batch := kinesisBatch(event("steady", "plain-1"), kpltest.Aggregate(mixed), kpltest.Aggregate(steady), event("flaky", "plain-2"))
		wantFailed := []string{batch.Records[1].Kinesis.SequenceNumber, batch.Records[3].Kinesis.SequenceNumber}
		ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second) // as TestTransientFailuresReportedBySequence
		defer cancel()
		resp, err := e.h.Kinesis(ctx, batch)
		if err != nil {
			t.Fatal(err)
		}
		if ctx.Err() != nil {
			t.Fatal("the handler returned after its deadline")
		}
		var got []string
		for _, f := range resp.BatchItemFailures {
			got = append(got, f.ItemIdentifier)
		}
		if strings.Join(got, ",") != strings.Join(wantFailed, ",") {
			t.Fatalf("reported %v, want the aggregate and the plain record once each: %v", got, wantFailed)
		}
		steadyEvents := 0
		for k := range w.events {
			if k[0] == "steady" {
				steadyEvents++
			}
		}
		if n := len(e.itemsIn(t, "E#steady#")); n != steadyEvents {
			t.Fatalf("%d steady events stored before the redelivery, want %d", n, steadyEvents)
		}
		e.proxy.SetRule(nil)
		retry := events.KinesisEvent{Records: []events.KinesisEventRecord{batch.Records[1], batch.Records[3]}}
		resp, err = e.h.Kinesis(invocation(t), retry)
		if err != nil || len(resp.BatchItemFailures) != 0 {
			t.Fatalf("redelivery: %v, %v", err, resp.BatchItemFailures)
		}
		e.assertExactlyOnce(t, w.events, 0)
	})
}

// TestKPLAwslabsFixture runs a Kinesis event whose aggregates the awslabs
// Node aggregator made (internal/kpl/testdata/gen-fixtures.js) through
// Invoke: a plain record, an aggregate of five sub-records (arrays, an
// event without time, one that is not JSON, an array with an invalid
// event), an aggregate of one, and one with a corrupt digest.
func TestKPLAwslabsFixture(t *testing.T) {
	b, err := os.ReadFile("testdata/kinesis-kpl.json")
	if err != nil {
		t.Fatal(err)
	}
	var ev events.KinesisEvent
	if err := json.Unmarshal(b, &ev); err != nil {
		t.Fatal(err)
	}
	seq := func(i int) string { return ev.Records[i].Kinesis.SequenceNumber }
	w := newKPLWant()
	for _, id := range []string{"plain-1", "kpl-1-0", "kpl-1-1a", "kpl-1-1b", "kpl-1-3", "kpl-1-4a", "kpl-2-0"} {
		w.events[[2]string{"kpl-test", id}] = true
	}
	w.stamped["kpl-1-3"] = true
	w.quarantined[seq(1)+" 2 -"] = []byte(`{"id":"kpl-1-2","source":"kpl-test"`)
	w.quarantined[seq(1)+" 4 1"] = []byte(`{"specversion":"1.0","id":"kpl-1-4b","source":"kpl-test"}`)
	w.quarantined[seq(3)+" - -"] = ev.Records[3].Kinesis.Data
	e := newEnv(t, false, nil)
	for round := range 2 {
		out, err := e.h.Invoke(context.Background(), b)
		if err != nil {
			t.Fatal(err)
		}
		if resp, ok := out.(events.KinesisEventResponse); !ok || len(resp.BatchItemFailures) != 0 {
			t.Fatalf("round %d: response %#v", round, out)
		}
		e.assertKPL(t, w, time.Date(2026, 11, 22, 11, 55, 0, 250e6, time.UTC))
	}
	for _, it := range e.itemsIn(t, "Q#") {
		o := item.OriginOf(it)
		reason := s(it, schema.Reason)
		if o.SubIndex == nil && !strings.HasPrefix(reason, "kpl: the MD5 digest does not match") {
			t.Errorf("corrupt aggregate quarantined with reason %q", reason)
		}
	}
}
