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
	table := testddb.Table(t)
	p := For(t, testddb.Endpoint(t))
	client := testddb.Client(t, p.URL)
	ctx := context.Background()
	var keys []map[string]types.AttributeValue
	for _, pk := range []string{"a", "b", "c"} {
		key := map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: pk}, "sk": &types.AttributeValueMemberS{Value: "1"}}
		if _, err := client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: key}); err != nil {
			t.Fatal(err)
		}
		keys = append(keys, key)
	}
	p.SetRule(func(r Request) (*Fault, Hold) {
		if r.Op != "BatchGetItem" {
			return nil, nil
		}
		return nil, func(item map[string]json.RawMessage) bool { return string(item["pk"]) == `{"S":"b"}` }
	})
	for _, consistent := range []bool{false, true} {
		out, err := client.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: map[string]types.KeysAndAttributes{
			table: {Keys: keys, ConsistentRead: aws.Bool(consistent)}}})
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]bool{}
		for _, it := range out.Responses[table] {
			got[it["pk"].(*types.AttributeValueMemberS).Value] = true
		}
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
