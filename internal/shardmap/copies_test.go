package shardmap

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/shardline/shardline/internal/schema"
	"github.com/shardline/shardline/pkg/bucketing"
	"github.com/shardline/shardline/testkit/testddb"
)

// TestWhereItPaysDecidesCopiesPerDay: with GSI_COPIES=where-it-pays, a
// day that follows a quiet one starts on one table shard without GSI
// copies, a day whose GSI count reaches its table count has none either,
// and any other day keeps them; the decision is in the record, read back
// by every reader, kept by every step, and a day without copies never has
// its GSI count raised. With the setting off, nothing changes.
func TestWhereItPaysDecidesCopiesPerDay(t *testing.T) {
	ctx := context.Background()
	table := testddb.Table(t)
	client := testddb.Client(t, testddb.Endpoint(t))
	c := &clock{time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC)}
	pays := func(shards, gsi int) *Registry {
		r := registry(t, table, c, shards, gsi)
		r.Config.Copies, r.Config.Carry = CopiesWhereItPays, true
		return r
	}
	hours := &Hours{Client: client, Table: table, Retention: 24 * time.Hour}
	const day1, day2, day3 = "2026-11-20", "2026-11-21", "2026-11-22"
	stream := func(src string) bucketing.Stream { return bucketing.Stream{Space: bucketing.Events, Source: src} }
	yesterday := func(src string, n int32) {
		t.Helper()
		if _, err := registry(t, table, c, 4, 1).Schedule(ctx, stream(src), day1); err != nil {
			t.Fatal(err)
		}
		if err := hours.Mark(ctx, stream(src), day1, [24]int32{3: n, 9: n}); err != nil {
			t.Fatal(err)
		}
	}
	yesterday("quiet", 2)
	yesterday("busy", QuietHour)
	yesterday("quiet-always", 2)
	yesterday("quiet-override", 2)

	r := pays(4, 1)
	r.Config.Shards.Overrides = map[string]int{"quiet-override": 4}
	for _, tc := range []struct {
		r      *Registry
		src    string
		want   bucketing.Step
		copied bool
	}{
		{r, "quiet", bucketing.Step{Shards: 1, GSIShards: 1, NoGSICopy: true}, false},
		{r, "busy", bucketing.Step{Shards: 4, GSIShards: 1}, true},
		{r, "new", bucketing.Step{Shards: 4, GSIShards: 1}, true},
		{r, "quiet-override", bucketing.Step{Shards: 4, GSIShards: 1, DayBucket: true}, true},
		{pays(4, 4), "even", bucketing.Step{Shards: 4, GSIShards: 4, NoGSICopy: true}, false},
		{pays(1, 1), "single", bucketing.Step{Shards: 1, GSIShards: 1, NoGSICopy: true}, false},
		{registry(t, table, c, 4, 1), "quiet-always", bucketing.Step{Shards: 4, GSIShards: 1, DayBucket: true}, true},
		{registry(t, table, c, 4, 4), "even-always", bucketing.Step{Shards: 4, GSIShards: 4}, true},
	} {
		s, err := tc.r.Schedule(ctx, stream(tc.src), day2)
		if err != nil {
			t.Fatal(err)
		}
		if len(s) != 1 || s[0] != tc.want || s[0].Copied() != tc.copied {
			t.Errorf("%s: schedule %+v, want %+v", tc.src, s, tc.want)
		}
		// Every reader decodes the decision from the record.
		d, _, err := ReadDay(ctx, client, table, stream(tc.src), day2)
		if err != nil || len(d.Sched) != 1 || d.Sched[0] != tc.want {
			t.Errorf("%s: read back %+v %v, want %+v", tc.src, d.Sched, err, tc.want)
		}
	}

	// A day without copies is raised on the table alone, keeps its
	// decision in every step, and is never raised for its GSI.
	c.t = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	// A writer configured with 4 table shards does not raise the day
	// that began on one to its configuration.
	if s, err := r.Schedule(ctx, stream("quiet"), day2); err != nil || len(s) != 1 {
		t.Fatalf("the day after a quiet day, re-read by a writer of 4 shards: %+v %v", s, err)
	}
	if _, raised, err := r.RaiseUnlessCovered(ctx, stream("quiet"), day2, bucketing.Step{Shards: 1, GSIShards: 6}, bucketing.Step{Shards: 1, GSIShards: 5}); err != nil || raised {
		t.Fatalf("a GSI raise of a day without copies: raised %v, %v", raised, err)
	}
	s, raised, err := r.Raise(ctx, stream("quiet"), day2, 6, 6)
	if err != nil || !raised {
		t.Fatalf("raise: %v %v", raised, err)
	}
	if len(s) != 2 || s[1].Shards != 6 || s[1].GSIShards != 1 || !s[1].NoGSICopy {
		t.Fatalf("raised schedule %+v, want a table step to 6 without copies", s)
	}
	d, _, err := ReadDay(ctx, client, table, stream("quiet"), day2)
	if err != nil || len(d.Sched) != 2 || d.Sched[1] != s[1] {
		t.Fatalf("raised schedule read back %+v %v", d.Sched, err)
	}
	// The next day carries the raise to both counts: as many GSI keys as
	// table keys, so again without copies.
	c.t = time.Date(2026, 11, 22, 0, 0, 1, 0, time.UTC)
	if s, err := pays(4, 1).Schedule(ctx, stream("quiet"), day3); err != nil || s[0] != (bucketing.Step{Shards: 6, GSIShards: 6, NoGSICopy: true}) {
		t.Fatalf("the day after a raised day without copies: %+v %v", s, err)
	}
}

// TestRecordsOfThePreviousReleaseHaveCopies: records written before
// GSI_COPIES ("sched", "dsched") read as days with GSI copies; a record
// without copies is stored under "bsched", which those releases cannot
// read (and so fail rather than look for its events on the GSI).
func TestRecordsOfThePreviousReleaseHaveCopies(t *testing.T) {
	ctx := context.Background()
	table := testddb.Table(t)
	client := testddb.Client(t, testddb.Endpoint(t))
	steps := &types.AttributeValueMemberL{Value: []types.AttributeValue{&types.AttributeValueMemberM{Value: map[string]types.AttributeValue{
		"from": &types.AttributeValueMemberN{Value: "0"}, "n": &types.AttributeValueMemberN{Value: "1"}, "g": &types.AttributeValueMemberN{Value: "1"}}}}}
	for _, attr := range []string{schema.Schedule, schema.DaySchedule} {
		s := bucketing.Stream{Space: bucketing.Events, Source: "old-" + attr}
		if _, err := client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: map[string]types.AttributeValue{
			schema.PK: &types.AttributeValueMemberS{Value: s.MetaPK("2026-11-21")}, schema.SK: &types.AttributeValueMemberS{Value: metaSK},
			attr: steps, schema.Version: &types.AttributeValueMemberN{Value: "1"},
		}}); err != nil {
			t.Fatal(err)
		}
		d, _, err := ReadDay(ctx, client, table, s, "2026-11-21")
		if err != nil || len(d.Sched) != 1 || !d.Sched[0].Copied() || d.Sched[0].Shards != 1 {
			t.Fatalf("%s: %+v %v; want one step of 1/1 with copies", attr, d.Sched, err)
		}
		// A writer of where-it-pays keeps the day as it was created.
		r := registry(t, table, &clock{time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC)}, 1, 1)
		r.Config.Copies = CopiesWhereItPays
		if sched, err := r.Schedule(ctx, s, "2026-11-21"); err != nil || !sched[0].Copied() {
			t.Fatalf("%s: a where-it-pays writer reads %+v %v", attr, sched, err)
		}
	}
	r := registry(t, table, &clock{time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC)}, 1, 1)
	r.Config.Copies = CopiesWhereItPays
	s := bucketing.Stream{Space: bucketing.Events, Source: "new"}
	if _, err := r.Schedule(ctx, s, "2026-11-21"); err != nil {
		t.Fatal(err)
	}
	out, err := client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: metaKey(s.MetaPK("2026-11-21"))})
	if err != nil {
		t.Fatal(err)
	}
	_, has := out.Item[schema.BaseSchedule]
	_, old := out.Item[schema.Schedule]
	_, oldDay := out.Item[schema.DaySchedule]
	if !has || old || oldDay {
		t.Fatalf("a record without copies is stored as %v; want %q only", out.Item, schema.BaseSchedule)
	}
}

func TestParseCopies(t *testing.T) {
	for in, want := range map[string]Copies{"": CopiesAlways, "always": CopiesAlways, "where-it-pays": CopiesWhereItPays} {
		if got, err := ParseCopies(in); err != nil || got != want {
			t.Errorf("ParseCopies(%q) = %q, %v", in, got, err)
		}
	}
	if _, err := ParseCopies("never"); err == nil {
		t.Error("ParseCopies(never) passed")
	}
}
