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

// TestBatchGetLeavesHeldKeysUnprocessed: with HoldKeysUnprocessed, a
// BatchGetItem through the proxy, strongly consistent or not, answers the
// keys the Hold does not pick and gives back the others in UnprocessedKeys,
// with the request's consistency; when it holds every key, it reads none.
func TestBatchGetLeavesHeldKeysUnprocessed(t *testing.T) {
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
	holdAll := false
	p.SetRule(func(r Request) (*Fault, Hold) {
		if r.Op != "BatchGetItem" {
			return nil, nil
		}
		r.HoldKeysUnprocessed()
		return nil, func(k map[string]json.RawMessage) bool { return holdAll || string(k["pk"]) == `{"S":"b"}` }
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
		left := out.UnprocessedKeys[table]
		if len(got) != 2 || !got["a"] || !got["c"] || len(left.Keys) != 1 ||
			left.Keys[0]["pk"].(*types.AttributeValueMemberS).Value != "b" || aws.ToBool(left.ConsistentRead) != consistent {
			t.Fatalf("consistent %v: answered %v, unprocessed %+v; want a and c, and b unprocessed with the request's consistency", consistent, got, left)
		}
	}
	holdAll = true
	out, err := client.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: map[string]types.KeysAndAttributes{table: {Keys: keys}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Responses[table]) != 0 || len(out.UnprocessedKeys[table].Keys) != 3 {
		t.Fatalf("every key held: answered %d items, %d keys unprocessed; want none and 3", len(out.Responses[table]), len(out.UnprocessedKeys[table].Keys))
	}
	if p.Held.Load() != 5 {
		t.Fatalf("%d keys held, want 5", p.Held.Load())
	}
}
