package ingest

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/shardline/shardline/internal/shardmap"
	"github.com/shardline/shardline/pkg/bucketing"
	"github.com/shardline/shardline/testkit/faultproxy"
	"github.com/shardline/shardline/testkit/simtime"
)

// hoursOf reads the hour index of source on day.
func (e *env) hoursOf(t *testing.T, source, day string) []int {
	t.Helper()
	out, err := e.client.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(e.table),
		Key: shardmap.HoursKey(bucketing.Stream{Space: bucketing.Events, Source: source}, day), ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	h, err := shardmap.DecodeHours(out.Item)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// TestHourIndexMarksEveryHourOnce: the hours of a day that hold events are
// in the day's hour index before the events are, a warm container does not
// write a marker twice, and a second container reads the index and marks
// only the hour it does not find there.
func TestHourIndexMarksEveryHourOnce(t *testing.T) {
	e := newEnv(t, true, nil)
	day := fixtureNow.Truncate(24 * time.Hour)
	at := func(h int, i int) []byte {
		return eventJSON("svc", fmt.Sprintf("%d-%d", h, i), day.Add(time.Duration(h)*time.Hour+time.Duration(i)*time.Second))
	}
	batch := kinesisBatch(at(3, 0), at(3, 1), at(7, 0), at(11, 5))
	if resp, err := e.h.Kinesis(invocation(t), batch); err != nil || len(resp.BatchItemFailures) > 0 {
		t.Fatalf("%v %v", err, resp.BatchItemFailures)
	}
	if got := e.hoursOf(t, "svc", bucketing.Day(day)); !reflect.DeepEqual(got, []int{3, 7, 11}) {
		t.Fatalf("hours %v, want [3 7 11]", got)
	}
	first := e.proxy.Count("UpdateItem")
	for i := range 5 { // a warm container, the same hours
		if resp, err := e.h.Kinesis(invocation(t), kinesisBatch(at(3, 10+i), at(11, 10+i))); err != nil || len(resp.BatchItemFailures) > 0 {
			t.Fatalf("%v %v", err, resp.BatchItemFailures)
		}
	}
	if n := e.proxy.Count("UpdateItem"); n != first {
		t.Errorf("a warm container wrote %d more hour markers", n-first)
	}
	other := New(e.h.cfg, e.h.writer.Client.(Client), Options{Now: e.h.now})
	before := e.proxy.Count("UpdateItem")
	if resp, err := other.Kinesis(invocation(t), kinesisBatch(at(7, 99), at(9, 0))); err != nil || len(resp.BatchItemFailures) > 0 {
		t.Fatalf("%v %v", err, resp.BatchItemFailures)
	}
	if n := e.proxy.Count("UpdateItem") - before; n != 1 {
		t.Errorf("a second container wrote %d hour markers, want 1 (hour 9; hour 7 is marked)", n)
	}
	if got := e.hoursOf(t, "svc", bucketing.Day(day)); !reflect.DeepEqual(got, []int{3, 7, 9, 11}) {
		t.Fatalf("hours %v, want [3 7 9 11]", got)
	}
	// The container that marked an hour added its first batch's count: a
	// lower bound of the hour's events (hour 3 holds 7, hour 7 2, hour 11
	// 6).
	d, _, err := shardmap.ReadDay(context.Background(), e.client, e.table, bucketing.Stream{Space: bucketing.Events, Source: "svc"}, bucketing.Day(day))
	if err != nil {
		t.Fatal(err)
	}
	for h, want := range map[int]int{3: 2, 7: 1, 9: 1, 11: 1, 0: 0, 12: 0} {
		if got := d.Hint(h); got != want {
			t.Errorf("hour %d: hint %d, want %d", h, got, want)
		}
	}
	if d.Sched == nil || !d.Indexed || d.Marked(5) || !d.Marked(9) {
		t.Errorf("day %+v", d)
	}
}

// TestHourMarkerFailureFailsItsEvents: an event is never stored while its
// hour's marker is not, so a reader that skips unmarked hours misses none.
func TestHourMarkerFailureFailsItsEvents(t *testing.T) {
	e := newSimEnv(t, true, nil)
	simtime.Run(t, fixtureNow, func(t *testing.T, clk *simtime.Clock) {
		e.on(t, clk, lag)
		e.proxy.SetRule(func(r faultproxy.Request) (*faultproxy.Fault, faultproxy.Hold) {
			if r.Op == "UpdateItem" {
				return faultproxy.ServerError, nil
			}
			return nil, nil
		})
		batch := kinesisBatch(eventJSON("svc", "a", fixtureNow.Add(-time.Minute)), eventJSON("svc", "b", fixtureNow.Add(-time.Minute)))
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		resp, err := e.h.Kinesis(ctx, batch)
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.BatchItemFailures) != 2 {
			t.Fatalf("%d records reported failed, want 2", len(resp.BatchItemFailures))
		}
		if n := len(e.itemsIn(t, "E#")); n != 0 {
			t.Fatalf("%d events stored without their hour marker", n)
		}
		e.proxy.SetRule(nil)
		if resp, err := e.h.Kinesis(invocation(t), batch); err != nil || len(resp.BatchItemFailures) > 0 {
			t.Fatalf("retry: %v %v", err, resp.BatchItemFailures)
		}
		if n := len(e.itemsIn(t, "E#")); n != 2 {
			t.Fatalf("%d events after the retry, want 2", n)
		}
		if got := e.hoursOf(t, "svc", bucketing.Day(fixtureNow)); !reflect.DeepEqual(got, []int{fixtureNow.Add(-time.Minute).Hour()}) {
			t.Fatalf("hours %v", got)
		}
	})
}
