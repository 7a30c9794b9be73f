package faultproxy

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/shardline/shardline/testkit/testddb"
)

// TestStaleBatchGetLeavesOutHeldItems: an eventually consistent
// BatchGetItem through the proxy answers without the items the Hold picks,
// and without them in UnprocessedKeys either, as a lagging replica does; a
// strongly consistent one answers every item.
func TestStaleBatchGetLeavesOutHeldItems(t *testing.T) {
	table, p, client, keys := threeItems(t)
	p.SetRule(holdB(false, nil))
	for _, consistent := range []bool{false, true} {
		got, out := readKeys(t, client, table, keys, consistent)
		want := 2
		if consistent {
			want = 3
		}
		if len(got) != want || !got["a"] || !got["c"] || len(out.UnprocessedKeys) != 0 {
			t.Fatalf("consistent %v: answered %v, unprocessed %v; want %d items, none unprocessed", consistent, got, out.UnprocessedKeys, want)
		}
	}
	if p.Held.Load() != 1 {
		t.Fatalf("%d items held, want 1", p.Held.Load())
	}
}

// threeItems is a fresh table holding the items "a", "b" and "c" (their
// keys), behind a proxy whose client it returns.
func threeItems(t *testing.T) (table string, p *Proxy, client *dynamodb.Client, keys []map[string]types.AttributeValue) {
	table = testddb.Table(t)
	p = For(t, testddb.Endpoint(t))
	client = testddb.Client(t, p.URL)
	for _, pk := range []string{"a", "b", "c"} {
		key := map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: pk}, "sk": &types.AttributeValueMemberS{Value: "1"}}
		if _, err := client.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(table), Item: key}); err != nil {
			t.Fatal(err)
		}
		keys = append(keys, key)
	}
	return table, p, client, keys
}

// holdB is a Rule that holds item (or key) "b" of every BatchGetItem, and
// every one when *all; unprocessed: as UnprocessedKeys.
func holdB(unprocessed bool, all *bool) Rule {
	return func(r Request) (*Fault, Hold) {
		if r.Op != "BatchGetItem" {
			return nil, nil
		}
		if unprocessed {
			r.HoldKeysUnprocessed()
		}
		return nil, func(item map[string]json.RawMessage) bool {
			return (all != nil && *all) || string(item["pk"]) == `{"S":"b"}`
		}
	}
}

// readKeys reads keys of table with one BatchGetItem; got names the items
// answered by their partition key.
func readKeys(t *testing.T, client *dynamodb.Client, table string, keys []map[string]types.AttributeValue, consistent bool) (got map[string]bool, out *dynamodb.BatchGetItemOutput) {
	t.Helper()
	out, err := client.BatchGetItem(context.Background(), &dynamodb.BatchGetItemInput{RequestItems: map[string]types.KeysAndAttributes{
		table: {Keys: keys, ConsistentRead: aws.Bool(consistent)}}})
	if err != nil {
		t.Fatal(err)
	}
	got = map[string]bool{}
	for _, it := range out.Responses[table] {
		got[it["pk"].(*types.AttributeValueMemberS).Value] = true
	}
	return got, out
}
