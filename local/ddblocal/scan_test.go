package ddblocal_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/shardline/shardline/internal/schema"
	"github.com/shardline/shardline/local/ddblocal"
	"github.com/shardline/shardline/testkit/testddb"
)

func TestMain(m *testing.M) { testddb.Main(m) }

// fill writes n items to table, every third of them big (about 12 KB,
// so that a 1 MB page holds about 85), the rest small, and returns their
// keys, "pk sk".
func fill(tb testing.TB, c *dynamodb.Client, table string, n int) map[string]bool {
	tb.Helper()
	big := strings.Repeat("x", 12000)
	keys := map[string]bool{}
	var reqs []types.WriteRequest
	flush := func() {
		if _, err := c.BatchWriteItem(context.Background(), &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{table: reqs}}); err != nil {
			tb.Fatalf("write: %v", err)
		}
		reqs = nil
	}
	for i := range n {
		pk, sk := fmt.Sprintf("p%d", i%3), fmt.Sprintf("%06d", i)
		it := map[string]types.AttributeValue{schema.PK: &types.AttributeValueMemberS{Value: pk}, schema.SK: &types.AttributeValueMemberS{Value: sk}}
		if i%3 == 0 {
			it["d"] = &types.AttributeValueMemberS{Value: big}
		}
		keys[pk+" "+sk] = true
		reqs = append(reqs, types.WriteRequest{PutRequest: &types.PutRequest{Item: it}})
		if len(reqs) == 25 {
			flush()
		}
	}
	if len(reqs) > 0 {
		flush()
	}
	return keys
}

// Every item is given once, pages past DynamoDB Local's 1 MB cut and past
// the Limits Scan sets included, and an error from page stops the scan.
func TestScanReadsEveryItemOnce(t *testing.T) {
	table := testddb.Table(t)
	c := testddb.Client(t, testddb.Endpoint(t))
	want := fill(t, c, table, 1500) // 500 big items: about 6 MB, 7 pages of 1 MB at least
	seen := map[string]int{}
	pages := 0
	in := &dynamodb.ScanInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true), Limit: aws.Int32(1)}
	err := ddblocal.Scan(context.Background(), c, in, func(out *dynamodb.ScanOutput) error {
		pages++
		for _, it := range out.Items {
			seen[schema.S(it[schema.PK])+" "+schema.S(it[schema.SK])]++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for k := range want {
		if seen[k] != 1 {
			t.Errorf("item %s read %d times, want once", k, seen[k])
		}
	}
	if len(seen) != len(want) {
		t.Errorf("%d items read, want %d", len(seen), len(want))
	}
	if pages < 7 {
		t.Errorf("%d pages for about 6 MB: DynamoDB Local's 1 MB cut did not apply", pages)
	}
	if aws.ToInt32(in.Limit) != 1 || in.ExclusiveStartKey != nil {
		t.Errorf("Scan changed its input: Limit %d, ExclusiveStartKey %v", aws.ToInt32(in.Limit), in.ExclusiveStartKey)
	}
	t.Logf("%d items in %d pages", len(seen), pages)

	stop := errors.New("enough")
	pages = 0
	err = ddblocal.Scan(context.Background(), c, &dynamodb.ScanInput{TableName: aws.String(table)}, func(*dynamodb.ScanOutput) error {
		pages++
		return stop
	})
	if !errors.Is(err, stop) || pages != 1 {
		t.Errorf("page's error: Scan returned %v after %d pages, want it after 1", err, pages)
	}
}

// A page's Limit follows what DynamoDB Local read for it, not what it
// answered: a count (Select COUNT) answers no items, and a filter few.
func TestPagesFollowWhatWasRead(t *testing.T) {
	table := testddb.Table(t)
	c := testddb.Client(t, testddb.Endpoint(t))
	fill(t, c, table, 1500)

	count, pages := 0, 0
	if err := ddblocal.Scan(context.Background(), c, &dynamodb.ScanInput{TableName: aws.String(table), Select: types.SelectCount}, func(out *dynamodb.ScanOutput) error {
		count += int(out.Count)
		pages++
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if count != 1500 || pages > 10 {
		t.Errorf("count of the table: %d in %d pages, want 1500 in the 7 to 10 pages of its 6 MB", count, pages)
	}

	// p0 holds the 500 big items, about 6 MB.
	key := func(pk string) *dynamodb.QueryInput {
		return &dynamodb.QueryInput{TableName: aws.String(table), KeyConditionExpression: aws.String("#pk = :pk"),
			ExpressionAttributeNames:  map[string]string{"#pk": schema.PK},
			ExpressionAttributeValues: map[string]types.AttributeValue{":pk": &types.AttributeValueMemberS{Value: pk}}}
	}
	seen, pages := map[string]int{}, 0
	if err := ddblocal.Query(context.Background(), c, key("p0"), func(out *dynamodb.QueryOutput) error {
		pages++
		for _, it := range out.Items {
			seen[schema.S(it[schema.SK])]++
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(seen) != 500 || pages < 6 {
		t.Errorf("query of p0: %d items in %d pages, want 500 in 6 or more", len(seen), pages)
	}
	for sk, n := range seen {
		if n != 1 {
			t.Errorf("query of p0: item %s read %d times", sk, n)
		}
	}

	// p1's 500 small items, none through the filter: pages of 256 and 512.
	in := key("p1")
	in.FilterExpression, in.ExpressionAttributeNames["#d"] = aws.String("attribute_exists(#d)"), "d"
	n, pages := 0, 0
	if err := ddblocal.Query(context.Background(), c, in, func(out *dynamodb.QueryOutput) error {
		n += len(out.Items)
		pages++
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if n != 0 || pages > 3 {
		t.Errorf("filtered query of p1: %d items in %d pages, want none in at most 3", n, pages)
	}
}

func TestScanError(t *testing.T) {
	c := testddb.Client(t, testddb.Endpoint(t))
	err := ddblocal.Scan(context.Background(), c, &dynamodb.ScanInput{TableName: aws.String("no-such-table")}, func(*dynamodb.ScanOutput) error { return nil })
	var nf *types.ResourceNotFoundException
	if !errors.As(err, &nf) {
		t.Errorf("scan of a missing table: %v, want ResourceNotFoundException", err)
	}
}

// BenchmarkScan reads about 12 MB (1,000 items of 12 KB, 2,000 small)
// with the SDK's paginator, no Limit, and with Scan. On the machine of
// the commit that added it: unlimited 2.93 s, paged 0.93 (3.2×); the
// gap grows with the table, as its square.
func BenchmarkScan(b *testing.B) {
	table := testddb.SharedTable(b)
	c := testddb.Client(b, testddb.Endpoint(b))
	n := len(fill(b, c, table, 3000))
	in := &dynamodb.ScanInput{TableName: aws.String(table)}
	b.Run("unlimited", func(b *testing.B) {
		for b.Loop() {
			got := 0
			p := dynamodb.NewScanPaginator(c, in)
			for p.HasMorePages() {
				out, err := p.NextPage(context.Background())
				if err != nil {
					b.Fatal(err)
				}
				got += len(out.Items)
			}
			if got != n {
				b.Fatalf("%d items, want %d", got, n)
			}
		}
	})
	b.Run("paged", func(b *testing.B) {
		for b.Loop() {
			got := 0
			if err := ddblocal.Scan(context.Background(), c, in, func(out *dynamodb.ScanOutput) error {
				got += len(out.Items)
				return nil
			}); err != nil {
				b.Fatal(err)
			}
			if got != n {
				b.Fatalf("%d items, want %d", got, n)
			}
		}
	})
}
