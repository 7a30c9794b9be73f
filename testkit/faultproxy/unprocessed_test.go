package faultproxy

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// TestBatchGetLeavesHeldKeysUnprocessed: with HoldKeysUnprocessed, a
// BatchGetItem through the proxy, strongly consistent or not, answers the
// keys the Hold does not pick and gives back the others in UnprocessedKeys,
// with the request's consistency; when it holds every key, it reads none.
func TestBatchGetLeavesHeldKeysUnprocessed(t *testing.T) {
	table, p, client, keys := threeItems(t)
	holdAll := false
	p.SetRule(holdB(true, &holdAll))
	for _, consistent := range []bool{false, true} {
		got, out := readKeys(t, client, table, keys, consistent)
		left := out.UnprocessedKeys[table]
		if len(got) != 2 || !got["a"] || !got["c"] || len(left.Keys) != 1 ||
			left.Keys[0]["pk"].(*types.AttributeValueMemberS).Value != "b" || aws.ToBool(left.ConsistentRead) != consistent {
			t.Fatalf("consistent %v: answered %v, unprocessed %+v; want a and c, and b unprocessed with the request's consistency", consistent, got, left)
		}
	}
	holdAll = true
	got, out := readKeys(t, client, table, keys, false)
	if len(got) != 0 || len(out.UnprocessedKeys[table].Keys) != 3 {
		t.Fatalf("every key held: answered %v, %d keys unprocessed; want none and 3", got, len(out.UnprocessedKeys[table].Keys))
	}
	if p.Held.Load() != 5 {
		t.Fatalf("%d keys held, want 5", p.Held.Load())
	}
}
