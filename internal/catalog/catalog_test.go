package catalog_test

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/shardline/shardline/internal/catalog"
	"github.com/shardline/shardline/internal/ingest"
	"github.com/shardline/shardline/internal/schema"
	"github.com/shardline/shardline/pkg/bucketing"
	"github.com/shardline/shardline/testkit/testddb"
)

func TestMain(m *testing.M) { testddb.Main(m) }

var now = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

// awkward sources: delimiters, escapes, spaces, non-ASCII, and sources that
// are prefixes of others, so that neither the key encoding nor the merge
// may confuse two of them.
var awkward = []string{"a", "ab", "a#b", "a%23b", "a/b", "a b", "a%", "#", "%", "b", "zz", "ünïcödé", "日本", "a\u00a0b", "~"}

// write stores one event per (source, day offset) through the real ingest
// handler, and returns the reference catalogue.
func write(t *testing.T, table string, plan map[string][]int) map[string][]string {
	t.Helper()
	h := ingest.New(ingest.DefaultConfig(table), testddb.Client(t, testddb.Endpoint(t)), ingest.Options{Now: func() time.Time { return now }})
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
	client := testddb.Client(t, testddb.Endpoint(t)) // one client, as a container has: its connections kept from page to page
	for {
		p, err := catalog.List(context.Background(), client, table, ds, after, limit)
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

// TestListsEverySourceOnceWithItsDays: the awkward sources, each on one
// day or on all three listed, paged at several limits: every source comes
// once, in bytewise order, with its days. (Three days, each of 17
// partitions that every page reads: a listing of seven, most of them
// empty, read 2.3 times as many, and days not asked or empty are
// TestListKeepsToTheDaysAsked's.)
func TestListsEverySourceOnceWithItsDays(t *testing.T) {
	table := testddb.Table(t)
	plan := map[string][]int{}
	for i, s := range awkward {
		plan[s] = []int{i % 3}
		if i%2 == 0 {
			plan[s] = []int{0, 1, 2}
		}
	}
	want := write(t, table, plan)
	var wantSorted []string
	for s := range want {
		wantSorted = append(wantSorted, s)
	}
	sort.Strings(wantSorted) // bytewise, as Go compares strings
	for _, limit := range []int{1, 2, 3, 7, 1000} {
		got, pages := listAll(t, table, days(3), limit)
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
	table := testddb.Table(t)
	write(t, table, map[string][]int{"old": {6}, "new": {0}, "both": {0, 6}})
	got, _ := listAll(t, table, days(2), 10)
	want := []catalog.Entry{{Source: "both", Days: days(1)}, {Source: "new", Days: days(1)}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
}

func TestOneEntryPerSourceAndDay(t *testing.T) {
	table := testddb.Table(t)
	write(t, table, map[string][]int{"s": {0, 0, 0, 1}})
	write(t, table, map[string][]int{"s": {0, 1}}) // a second container, a warm day
	got, _ := listAll(t, table, days(3), 10)
	if len(got) != 1 || !reflect.DeepEqual(got[0].Days, days(2)) {
		t.Errorf("got %+v", got)
	}
}

// legacy writes source's entry of day where releases before the sharded
// catalogue wrote it: the day's one partition.
func legacy(t *testing.T, table, source, day string) {
	t.Helper()
	_, err := testddb.Client(t, testddb.Endpoint(t)).PutItem(context.Background(), &dynamodb.PutItemInput{
		TableName: aws.String(table),
		Item: map[string]types.AttributeValue{
			schema.PK: &types.AttributeValueMemberS{Value: bucketing.LegacyCatalogPK(day)},
			schema.SK: &types.AttributeValueMemberS{Value: source},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestListSeesBothLayouts: while a deploy runs, containers of the old code
// list sources in the day's one partition and containers of the new code
// in its shards; afterwards, the days before it stay in the old layout. A
// reader lists every source once, with the days of both layouts merged.
func TestListSeesBothLayouts(t *testing.T) {
	table := testddb.Table(t)
	ds := days(3)
	want := write(t, table, map[string][]int{"new": {0}, "both": {0, 1}, "a#b": {1}})
	for src, dd := range map[string][]string{"old": {ds[0], ds[1]}, "both": {ds[0], ds[2]}, "a%23b": {ds[2]}, "a#b": {ds[1]}} {
		for _, d := range dd {
			legacy(t, table, src, d)
			if !slices.Contains(want[src], d) {
				want[src] = append(want[src], d)
			}
		}
		sort.Strings(want[src])
	}
	for _, limit := range []int{1, 2, 1000} {
		got, pages := listAll(t, table, ds, limit)
		var names []string
		for _, e := range got {
			names = append(names, e.Source)
			if !reflect.DeepEqual(e.Days, want[e.Source]) {
				t.Errorf("limit %d: %q days %v, want %v", limit, e.Source, e.Days, want[e.Source])
			}
		}
		if w := []string{"a#b", "a%23b", "both", "new", "old"}; !reflect.DeepEqual(names, w) {
			t.Errorf("limit %d: %d pages of %q, want %q", limit, pages, names, w)
		}
	}
}

// TestPagesAreTheSortedListCut: a page is the next limit sources of the
// one sorted list of every day's sources, whichever partitions they lie
// in, as when the catalogue had one partition a day: full pages, the
// cursor at the last source of each, an empty cursor on the last. 200
// sources on one or both of two days: about 8 in each of a day's 16
// partitions and 13 in its legacy one, more than a page of 7 reads of
// either at once.
func TestPagesAreTheSortedListCut(t *testing.T) {
	table := testddb.Table(t)
	client := testddb.Client(t, testddb.Endpoint(t))
	ds := days(2)
	seen := map[string]bool{}
	var all []string
	for i := range 200 {
		src := fmt.Sprintf("svc-%03d/%x", i, i*7919%1000)
		for d, day := range ds {
			if (i+d)%3 == 0 {
				continue // not every source every day
			}
			var err error
			if i%10 == 0 {
				legacy(t, table, src, day)
			} else {
				err = catalog.Record(context.Background(), client, table, src, day, time.Time{})
			}
			if err != nil {
				t.Fatal(err)
			}
			if !seen[src] {
				seen[src] = true
				all = append(all, src)
			}
		}
	}
	sort.Strings(all)
	for _, limit := range []int{7, 64, 1000} {
		after, n := "", 0
		for {
			p, err := catalog.List(context.Background(), client, table, ds, after, limit)
			if err != nil {
				t.Fatal(err)
			}
			want := all[n:min(n+limit, len(all))]
			var got []string
			for _, e := range p.Entries {
				got = append(got, e.Source)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("limit %d, page after %q: %d sources %q..., want %d", limit, after, len(got), got[:min(3, len(got))], len(want))
			}
			n += len(got)
			if n == len(all) {
				if p.Next != "" {
					t.Errorf("limit %d: last page's cursor %q, want none", limit, p.Next)
				}
				break
			}
			if p.Next != got[len(got)-1] {
				t.Fatalf("limit %d: cursor %q, want the page's last source %q", limit, p.Next, got[len(got)-1])
			}
			after = p.Next
		}
	}
}

// TestEntriesAreSpread: the ingest handler lists each source in the
// partition its hash picks, never in the day's old single partition.
func TestEntriesAreSpread(t *testing.T) {
	table := testddb.Table(t)
	plan := map[string][]int{}
	for _, s := range awkward {
		plan[s] = []int{0}
	}
	write(t, table, plan)
	shards := map[int]bool{}
	for _, it := range testddb.Scan(t, testddb.Client(t, testddb.Endpoint(t)), table) {
		pk := it[schema.PK].(*types.AttributeValueMemberS).Value
		if !strings.HasPrefix(pk, "S#") {
			continue
		}
		src := it[schema.SK].(*types.AttributeValueMemberS).Value
		day, shard, err := bucketing.ParseCatalogPK(pk)
		if err != nil || day != days(1)[0] || shard != bucketing.CatalogShard(src) {
			t.Errorf("%q listed under %q: day %q shard %d %v", src, pk, day, shard, err)
		}
		shards[shard] = true
	}
	if len(shards) < 6 {
		t.Errorf("%d sources in %d catalogue partitions", len(awkward), len(shards))
	}
}
