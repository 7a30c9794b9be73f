package shardmap

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/shardline/shardline/internal/schema"
	"github.com/shardline/shardline/pkg/bucketing"
	"github.com/shardline/shardline/testkit/testddb"
)

// TestDemandRemovesManyStaleWriters: 1,000 writers (containers) reported
// and then stopped, as after a fleet scaled in. A writer that reports on
// sees them stale and removes them over its next reports, a bounded number
// at a time, each report an update DynamoDB takes (an expression under its
// 4 KB), until the item holds its report alone. Before, it named all 1,000
// in one REMOVE, an expression of 8 KB that DynamoDB refused, on every
// report thereafter: no writer could report the source's demand again.
func TestDemandRemovesManyStaleWriters(t *testing.T) {
	ctx := context.Background()
	table := testddb.Table(t)
	c := testddb.Client(t, testddb.Endpoint(t))
	src := bucketing.Stream{Space: bucketing.Events, Source: "fleet/src"}
	day := "2026-11-24"
	now := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	// The item as the 1,000 writers' reports leave it (one PutItem rather
	// than 1,000 reports, each answered with the whole item).
	item := map[string]types.AttributeValue{
		schema.PK: &types.AttributeValueMemberS{Value: src.MetaPK(day)},
		schema.SK: &types.AttributeValueMemberS{Value: demandSK},
	}
	for i := range 1000 {
		writer := fmt.Sprintf("2026/11/24/[$LATEST]%032x", i) // as long as a Lambda log stream's name
		item[demandPrefix+writer] = encodeReport(Measure{Rates: Rates{Table: 10}}, now)
	}
	if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: item}); err != nil {
		t.Fatal(err)
	}
	d := &Demand{Client: c, Table: table, Retention: 24 * time.Hour}
	reports := 0
	for now = now.Add(2 * time.Minute); ; now = now.Add(time.Second) {
		sum, err := d.Report(ctx, src, day, "survivor", Measure{Rates: Rates{Table: 10}}, now)
		if err != nil {
			t.Fatalf("report %d, with %d stale writers to remove: %v", reports, len(d.stale[src.MetaPK(day)]), err)
		}
		reports++
		if sum.Writers != 1 || sum.Table != 10 {
			t.Fatalf("report %d: %+v, want the survivor's alone", reports, sum)
		}
		if len(d.stale[src.MetaPK(day)]) == 0 {
			break
		}
		if reports > 1000/maxRemoved+2 {
			t.Fatalf("%d reports and %d stale writers left", reports, len(d.stale[src.MetaPK(day)]))
		}
	}
	for _, it := range scanPK(t, c, table, src.MetaPK(day)) {
		if schema.S(it[schema.SK]) == demandSK && len(it) != 4 { // pk, sk, ttl, the survivor
			t.Fatalf("after %d reports the item holds %d attributes, want the survivor's report alone", reports, len(it))
		}
	}
	t.Logf("1,000 stale writers removed in %d reports", reports)
}
