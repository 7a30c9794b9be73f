package catalog_test

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/shardline/shardline/internal/catalog"
	"github.com/shardline/shardline/internal/ingest"
	"github.com/shardline/shardline/internal/testdb"
	"github.com/shardline/shardline/pkg/bucketing"
)

func TestMain(m *testing.M) { testdb.Main(m) }

var now = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

// awkward sources: delimiters, escapes, spaces, non-ASCII, and sources that
// are prefixes of others, so that neither the key encoding nor the merge
// may confuse two of them.
var awkward = []string{"a", "ab", "a#b", "a%23b", "a/b", "a b", "a%", "#", "%", "b", "zz", "ünïcödé", "日本", "a\u00a0b", "~"}

// write stores one event per (source, day offset) through the real ingest
// handler, and returns the reference catalogue.
func write(t *testing.T, table string, plan map[string][]int) map[string][]string {
	t.Helper()
	h := ingest.New(ingest.DefaultConfig(table), testdb.Client(t, testdb.Endpoint(t)), ingest.Options{Now: func() time.Time { return now }})
	var ev events.KinesisEvent
	want := map[string][]string{}
	for src, offsets := range plan {
		for _, off := range offsets {
			at := now.Add(-time.Duration(off) * 24 * time.Hour)
			b, _ := json.Marshal(map[string]any{"id": fmt.Sprint(off), "source": src, "type": "t", "time": at.Format(time.RFC3339)})
			ev.Records = append(ev.Records, events.KinesisEventRecord{EventSource: "aws:kinesis",
				Kinesis: events.KinesisRecord{Data: b, SequenceNumber: fmt.Sprint(len(ev.Records))}})
			want[src] = append(want[src], bucketing.Day(at))
		}
	}
	resp, err := h.Kinesis(context.Background(), ev)
	if err != nil || len(resp.BatchItemFailures) > 0 {
		t.Fatalf("ingest: %v, %d failures", err, len(resp.BatchItemFailures))
	}
	for _, d := range want {
		sort.Strings(d)
	}
	return want
}

func days(n int) []string {
	var out []string
	for i := n - 1; i >= 0; i-- {
		out = append(out, bucketing.Day(now.Add(-time.Duration(i)*24*time.Hour)))
	}
	return out
}

// listAll pages through List and checks each page's order.
func listAll(t *testing.T, table string, ds []string, limit int) ([]catalog.Entry, int) {
	t.Helper()
	var all []catalog.Entry
	after, pages := "", 0
	for {
		p, err := catalog.List(context.Background(), testdb.Client(t, testdb.Endpoint(t)), table, ds, after, limit)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		if len(p.Entries) > limit {
			t.Fatalf("page of %d entries, limit %d", len(p.Entries), limit)
		}
		all = append(all, p.Entries...)
		if p.Next == "" {
			return all, pages
		}
		if p.Next <= after {
			t.Fatalf("cursor went back: %q after %q", p.Next, after)
		}
		after = p.Next
		if pages > 1000 {
			t.Fatal("paging does not end")
		}
	}
}

func TestListsEverySourceOnceWithItsDays(t *testing.T) {
	table := testdb.Table(t)
	plan := map[string][]int{}
	for i, s := range awkward {
		plan[s] = []int{i % 3}
		if i%2 == 0 {
			plan[s] = append(plan[s], 3, 5)
		}
	}
	want := write(t, table, plan)
	var wantSorted []string
	for s := range want {
		wantSorted = append(wantSorted, s)
	}
	sort.Strings(wantSorted) // bytewise, as Go compares strings
	for _, limit := range []int{1, 2, 3, 7, 1000} {
		got, pages := listAll(t, table, days(7), limit)
		var names []string
		for _, e := range got {
			names = append(names, e.Source)
			if !reflect.DeepEqual(e.Days, want[e.Source]) {
				t.Errorf("limit %d: %q days %v, want %v", limit, e.Source, e.Days, want[e.Source])
			}
		}
		if !reflect.DeepEqual(names, wantSorted) {
			t.Errorf("limit %d: sources (%d pages)\n got %q\nwant %q", limit, pages, names, wantSorted)
		}
	}
}

func TestListKeepsToTheDaysAsked(t *testing.T) {
	table := testdb.Table(t)
	write(t, table, map[string][]int{"old": {6}, "new": {0}, "both": {0, 6}})
	got, _ := listAll(t, table, days(2), 10)
	want := []catalog.Entry{{Source: "both", Days: days(1)}, {Source: "new", Days: days(1)}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
}

func TestOneEntryPerSourceAndDay(t *testing.T) {
	table := testdb.Table(t)
	write(t, table, map[string][]int{"s": {0, 0, 0, 1}})
	write(t, table, map[string][]int{"s": {0, 1}}) // a second container, a warm day
	got, _ := listAll(t, table, days(3), 10)
	if len(got) != 1 || !reflect.DeepEqual(got[0].Days, days(2)) {
		t.Errorf("got %+v", got)
	}
}
