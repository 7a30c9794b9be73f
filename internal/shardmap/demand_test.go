package shardmap

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/shardline/shardline/internal/schema"
	"github.com/shardline/shardline/pkg/bucketing"
	"github.com/shardline/shardline/testkit/testddb"
)

// TestDemandAddsUpTheWritersReports: each writer's report answers with
// the sum of the fresh ones; a writer that stopped reporting drops out of
// the sum and then out of the item; a writer's second report says so; and
// a reader of the day's record and hour index does not read the reports.
func TestDemandAddsUpTheWritersReports(t *testing.T) {
	ctx := context.Background()
	table := testddb.Table(t)
	c := testddb.Client(t, testddb.Endpoint(t))
	src := bucketing.Stream{Space: bucketing.Events, Source: "hot/src"}
	day := "2026-11-24"
	now := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	r := listed(&Registry{Client: c, Table: table, Config: Config{Shards: bucketing.Counts{Default: 4}, GSIShards: bucketing.Counts{Default: 1}}, Now: func() time.Time { return now }})
	if _, err := r.Schedule(ctx, src, day); err != nil {
		t.Fatal(err)
	}
	writers := []*Demand{}
	for range 3 {
		writers = append(writers, &Demand{Client: c, Table: table, Retention: 24 * time.Hour, Fresh: 20 * time.Second})
	}
	var sum Sum
	var err error
	for i, d := range writers {
		if sum, err = d.Report(ctx, src, day, string(rune('a'+i)), Measure{Rates: Rates{Table: 100, GSI: 50}}, now); err != nil {
			t.Fatal(err)
		}
		if sum.ReportedBefore || sum.Writers != i+1 || sum.Table != float64(100*(i+1)) || sum.GSI != float64(50*(i+1)) {
			t.Fatalf("writer %d's first report: %+v", i, sum)
		}
	}
	// Ten seconds on, a reports again: the three are fresh, and a has
	// reported before.
	now = now.Add(10 * time.Second)
	if sum, err = writers[0].Report(ctx, src, day, "a", Measure{Rates: Rates{Table: 120, GSI: 60}}, now); err != nil {
		t.Fatal(err)
	}
	if !sum.ReportedBefore || sum.Writers != 3 || sum.Table != 320 {
		t.Fatalf("a again: %+v", sum)
	}
	// Fifteen seconds later c has stopped: a and b report; c's report is
	// 25 s old, past Fresh, and left out.
	now = now.Add(15 * time.Second)
	if sum, err = writers[1].Report(ctx, src, day, "b", Measure{Rates: Rates{Table: 80, GSI: 40}}, now); err != nil {
		t.Fatal(err)
	}
	if sum.ReportedBefore || sum.Writers != 2 || sum.Table != 200 || sum.GSI != 100 {
		t.Fatalf("a and b: %+v", sum)
	}
	// b's next report removes what it saw stale: c's.
	now = now.Add(time.Second)
	if _, err = writers[1].Report(ctx, src, day, "b", Measure{Rates: Rates{Table: 80, GSI: 40}}, now); err != nil {
		t.Fatal(err)
	}
	items := scanPK(t, c, table, src.MetaPK(day))
	for _, it := range items {
		if schema.S(it[schema.SK]) == demandSK {
			if _, ok := it[demandPrefix+"c"]; ok {
				t.Fatalf("c's stale report is still in the item: %v", it)
			}
		}
	}
	d, _, err := ReadDay(ctx, c, table, src, day)
	if err != nil || len(d.Sched) != 1 || d.Sched[0].Shards != 4 {
		t.Fatalf("ReadDay beside the demand item: %+v %v", d, err)
	}
}

// scanPK is every item of partition pk.
func scanPK(t *testing.T, c *dynamodb.Client, table, pk string) []map[string]types.AttributeValue {
	t.Helper()
	out, err := c.Query(context.Background(), &dynamodb.QueryInput{
		TableName:                 aws.String(table),
		KeyConditionExpression:    aws.String("#pk = :pk"),
		ExpressionAttributeNames:  map[string]string{"#pk": schema.PK},
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": &types.AttributeValueMemberS{Value: pk}},
		ConsistentRead:            aws.Bool(true),
	})
	if err != nil {
		t.Fatal(err)
	}
	return out.Items
}

// TestDemandAddsUpWhatTheKeysTook: the writers' reports add up what each
// index's keys took of them, and the indexes any writer saw refuse; a
// report under other counts (before a raise took effect) measured other
// keys and is left out; a report an earlier release wrote ([table, GSI,
// time]) still counts, as a demand that measured no capacity.
func TestDemandAddsUpWhatTheKeysTook(t *testing.T) {
	ctx := context.Background()
	table := testddb.Table(t)
	c := testddb.Client(t, testddb.Endpoint(t))
	src := bucketing.Stream{Space: bucketing.Events, Source: "hot/src"}
	day := "2026-11-24"
	now := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	// An earlier release's writer "old" reported 100/100.
	_, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: map[string]types.AttributeValue{
		schema.PK: &types.AttributeValueMemberS{Value: src.MetaPK(day)},
		schema.SK: &types.AttributeValueMemberS{Value: demandSK},
		demandPrefix + "old": &types.AttributeValueMemberL{Value: []types.AttributeValue{
			&types.AttributeValueMemberN{Value: "100"}, &types.AttributeValueMemberN{Value: "100"},
			&types.AttributeValueMemberN{Value: strconv.FormatInt(now.Unix(), 10)}}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	a := &Demand{Client: c, Table: table, Fresh: 20 * time.Second}
	b := &Demand{Client: c, Table: table, Fresh: 20 * time.Second}
	before := &Demand{Client: c, Table: table, Fresh: 20 * time.Second}
	if _, err := before.Report(ctx, src, day, "before", Measure{Rates: Rates{180, 180}, Took: Rates{60, 60}, Refused: TableIndex, Shards: 4, GSIShards: 1}, now); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Report(ctx, src, day, "a", Measure{Rates: Rates{180, 180}, Took: Rates{60, 60}, Refused: GSIIndex, Shards: 4, GSIShards: 5, Behind: 42}, now); err != nil {
		t.Fatal(err)
	}
	sum, err := b.Report(ctx, src, day, "b", Measure{Rates: Rates{180, 180}, Took: Rates{65, 65.5}, Shards: 4, GSIShards: 5}, now)
	if err != nil {
		t.Fatal(err)
	}
	want := Sum{Measure: Measure{Rates: Rates{460, 460}, Took: Rates{125, 125.5}, Refused: GSIIndex, Shards: 4, GSIShards: 5, Behind: 42}, Writers: 3}
	if sum != want {
		t.Fatalf("sum %+v, want %+v", sum, want)
	}
}
