package faultproxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/shardline/shardline/testkit/testddb"
)

func keyed(pk, gpk string) map[string]json.RawMessage {
	return map[string]json.RawMessage{
		"pk":  json.RawMessage(fmt.Sprintf(`{"S":%q}`, pk)),
		"gpk": json.RawMessage(fmt.Sprintf(`{"S":%q}`, gpk)),
		"e":   json.RawMessage(`{"S":"x"}`),
	}
}

// TestPartitionsThrottleOnlyTheKeyOverItsCeiling: a key over its ceiling
// refuses what passes it, other keys write on, a GSI key over its ceiling
// refuses for the table too, and a second later the key takes writes again.
func TestPartitionsThrottleOnlyTheKeyOverItsCeiling(t *testing.T) {
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	m := &Partitions{WCU: 10, Keys: []string{"pk", "gpk"}, Now: func() time.Time { return now }}
	held := 0
	for i := range 25 {
		if m.take(keyed("hot", fmt.Sprintf("g%d", i))) {
			held++
		}
	}
	if held != 15 {
		t.Fatalf("%d of 25 writes to one key held, want 15 over its 10", held)
	}
	if m.take(keyed("cold", "g-other")) {
		t.Fatal("a write to a cold key was held")
	}
	for i := range 10 {
		m.take(keyed(fmt.Sprintf("k%d", i), "g-hot"))
	}
	if !m.take(keyed("k-new", "g-hot")) {
		t.Fatal("a write over its GSI key's ceiling was not held")
	}
	now = now.Add(time.Second)
	if m.take(keyed("hot", "g-later")) {
		t.Fatal("the key was still throttled a second later")
	}
	if hot := m.Hot(); hot["pk=hot"] != 15 || hot["gpk=g-hot"] != 1 || len(hot) != 2 {
		t.Fatalf("Hot() = %v", hot)
	}
	if m.Seen.Load() != 38 || m.Throttled.Load() != 16 {
		t.Fatalf("seen %d throttled %d", m.Seen.Load(), m.Throttled.Load())
	}
}

// TestPartitionsScaleAndDebt: Scale sets the ceiling, and an item larger
// than a full bucket is written once the bucket is full, leaving it in
// debt, rather than never.
func TestPartitionsScaleAndDebt(t *testing.T) {
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	m := &Partitions{Scale: 250, Keys: []string{"pk"}, Now: func() time.Time { return now }}
	if m.Ceiling() != 4 {
		t.Fatalf("ceiling %v at scale 250, want 4", m.Ceiling())
	}
	big := keyed("k", "")
	big["e"] = json.RawMessage(fmt.Sprintf(`{"S":%q}`, strings.Repeat("x", 6000)))
	if m.take(big) {
		t.Fatal("a 6-unit item was refused by a full 4-unit bucket")
	}
	if !m.take(keyed("k", "")) {
		t.Fatal("a key in debt took a write")
	}
	now = now.Add(500 * time.Millisecond)
	if !m.take(keyed("k", "")) {
		t.Fatal("a key 2 units in debt took a write half a second later")
	}
	now = now.Add(500 * time.Millisecond)
	if m.take(keyed("k", "")) {
		t.Fatal("the key was still in debt a second later")
	}
	if k := m.Key("pk=k"); k.Writes != 2 || k.Units != 7 || k.Peak != 6 || k.Refused != 2 {
		t.Fatalf("Key = %+v", k)
	}
}

// modelled is a table behind the proxy with the model m on it, and a
// client that does not retry, so that each call shows the model's answer.
func modelled(t *testing.T, m *Partitions) (*dynamodb.Client, string) {
	t.Helper()
	table := testddb.Table(t)
	p := For(t, testddb.Endpoint(t))
	p.SetRule(m.Rule())
	c := testddb.Client(t, p.URL)
	return dynamodb.New(c.Options(), func(o *dynamodb.Options) { o.RetryMaxAttempts = 1 }), table
}

func sattr(s string) types.AttributeValue { return &types.AttributeValueMemberS{Value: s} }

func throttled(err error) bool {
	var pt *types.ProvisionedThroughputExceededException
	return errors.As(err, &pt)
}

// TestPartitionsSingleItemWrites: PutItem, UpdateItem and DeleteItem over
// their key's ceiling are refused with ProvisionedThroughputExceeded, as
// DynamoDB refuses them; what they cost is what DynamoDB bills: an update
// the larger of the item before and after, a refused conditional write its
// estimate.
func TestPartitionsSingleItemWrites(t *testing.T) {
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	m := &Partitions{WCU: 10, Keys: []string{"pk", "gpk"}, Now: func() time.Time { mu.Lock(); defer mu.Unlock(); return now }}
	c, table := modelled(t, m)
	ctx := context.Background()
	key := map[string]types.AttributeValue{"pk": sattr("C#src"), "sk": sattr("2026-11-22T10")}
	update := func(v string) error {
		_, err := c.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(table), Key: key,
			UpdateExpression:          aws.String("SET #v = :v"),
			ExpressionAttributeNames:  map[string]string{"#v": "v"},
			ExpressionAttributeValues: map[string]types.AttributeValue{":v": sattr(v)}})
		return err
	}
	// 3 units (a 3,000-byte item), then 3 again (3,000 before, 5 after).
	if err := update(strings.Repeat("x", 3000)); err != nil {
		t.Fatal(err)
	}
	if err := update("small"); err != nil {
		t.Fatal(err)
	}
	if k := m.Key("pk=C#src"); k.Writes != 2 || k.Units != 6 || k.Peak != 6 {
		t.Fatalf("after two updates: %+v, want 2 writes of 3 units", k)
	}
	// 4 units left: four 1-unit puts go, the fifth is refused.
	put := func(sk string, cond bool) error {
		in := &dynamodb.PutItemInput{TableName: aws.String(table),
			Item: map[string]types.AttributeValue{"pk": sattr("C#src"), "sk": sattr(sk), "gpk": sattr("G#g")}}
		if cond {
			in.ConditionExpression = aws.String("attribute_not_exists(pk)")
		}
		_, err := c.PutItem(ctx, in)
		return err
	}
	for i := range 4 {
		if err := put(fmt.Sprint(i), false); err != nil {
			t.Fatalf("put %d: %v", i, err)
		}
	}
	if err := put("4", false); !throttled(err) {
		t.Fatalf("a put over the ceiling: %v, want ProvisionedThroughputExceededException", err)
	}
	if _, err := c.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(table), Key: key}); !throttled(err) {
		t.Fatalf("a delete over the ceiling: %v, want ProvisionedThroughputExceededException", err)
	}
	// A second later: a refused conditional put is charged, a delete is
	// charged what the deleted item was.
	mu.Lock()
	now = now.Add(time.Second)
	mu.Unlock()
	var cond *types.ConditionalCheckFailedException
	if err := put("0", true); !errors.As(err, &cond) {
		t.Fatalf("conditional put: %v", err)
	}
	if _, err := c.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(table), Key: key}); err != nil {
		t.Fatal(err)
	}
	k := m.Key("pk=C#src")
	if k.Writes != 8 || k.Units != 12 || k.Refused != 2 {
		t.Fatalf("key %+v, want 8 writes of 12 units, 2 refused", k)
	}
	if g := m.Key("gpk=G#g"); g.Writes != 5 || g.Refused != 0 {
		t.Fatalf("GSI key %+v, want the 5 puts charged, none refused for it", g)
	}
	if m.Seen.Load() != 10 || m.Throttled.Load() != 2 {
		t.Fatalf("seen %d throttled %d", m.Seen.Load(), m.Throttled.Load())
	}
}

// TestPartitionsBatchWrites: a BatchWriteItem partly over its keys'
// ceilings has the writes over it unprocessed; one wholly over is refused
// with ProvisionedThroughputExceeded, as DynamoDB refuses it.
func TestPartitionsBatchWrites(t *testing.T) {
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	m := &Partitions{WCU: 3, Keys: []string{"pk"}, Now: func() time.Time { return now }}
	c, table := modelled(t, m)
	batch := func(pks ...string) (*dynamodb.BatchWriteItemOutput, error) {
		var reqs []types.WriteRequest
		for i, pk := range pks {
			reqs = append(reqs, types.WriteRequest{PutRequest: &types.PutRequest{
				Item: map[string]types.AttributeValue{"pk": sattr(pk), "sk": sattr(fmt.Sprint(i))}}})
		}
		return c.BatchWriteItem(context.Background(), &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{table: reqs}})
	}
	out, err := batch("a", "a", "a", "a", "b")
	if err != nil {
		t.Fatal(err)
	}
	if u := out.UnprocessedItems[table]; len(u) != 1 || u[0].PutRequest.Item["sk"].(*types.AttributeValueMemberS).Value != "3" {
		t.Fatalf("unprocessed %+v, want the fourth write to a", u)
	}
	if _, err := batch("a", "a"); !throttled(err) {
		t.Fatalf("a batch wholly over: %v, want ProvisionedThroughputExceededException", err)
	}
	del := []types.WriteRequest{{DeleteRequest: &types.DeleteRequest{Key: map[string]types.AttributeValue{"pk": sattr("a"), "sk": sattr("0")}}}}
	if _, err := c.BatchWriteItem(context.Background(), &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{table: del}}); !throttled(err) {
		t.Fatalf("a delete over the ceiling: %v, want ProvisionedThroughputExceededException", err)
	}
	if a, b := m.Key("pk=a"), m.Key("pk=b"); a.Writes != 3 || a.Refused != 4 || b.Writes != 1 || b.Refused != 0 {
		t.Fatalf("a %+v, b %+v", a, b)
	}
}

// TestPartitionsReport: per key space, the writes, the hottest key's
// one-second peak, and the keys refused.
func TestPartitionsReport(t *testing.T) {
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	m := &Partitions{WCU: 4, Keys: []string{"pk", "gpk"}, Now: func() time.Time { return now }}
	for i := range 3 {
		m.take(keyed("S#2026-11-22#1", fmt.Sprintf("G#s#%d", i)))
		now = now.Add(400 * time.Millisecond)
	}
	// At 1.2 s, the GSI key's first write has left its window.
	m.take(keyed("S#2026-11-22#2", "G#s#0"))
	for range 6 {
		m.take(keyed("M#E#hot#2026-11-22", ""))
	}
	rep := m.Report()
	var spaces []string
	for _, s := range rep {
		spaces = append(spaces, s.Space)
	}
	if strings.Join(spaces, " ") != "gpk=G pk=M pk=S" {
		t.Fatalf("spaces %q", spaces)
	}
	if s := m.Space("pk=S"); s.Keys != 2 || s.Writes != 4 || s.Peak.Key != "pk=S#2026-11-22#1" || s.Peak.Peak != 3 || s.Refused != 0 {
		t.Errorf("catalogue %+v", s)
	}
	if s := m.Space("pk=M"); s.Refused != 2 || len(s.Hot) != 1 || s.Hot[0].Key != "pk=M#E#hot#2026-11-22" || s.Peak.Peak != 4 {
		t.Errorf("records %+v", s)
	}
	if s := m.Space("gpk=G"); s.Keys != 3 || s.Writes != 4 || s.Peak.Peak != 1 {
		t.Errorf("GSI %+v", s)
	}
	if s := m.Space("pk=Q"); s.Keys != 0 {
		t.Errorf("nothing written: %+v", s)
	}
}

// TestKeysOnOnePartitionShareItsCeiling: two key values Partition puts on
// one partition take its ceiling between them, a third key beside them
// has its own, and an item whose two keys are on one partition pays once.
func TestKeysOnOnePartitionShareItsCeiling(t *testing.T) {
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	m := &Partitions{WCU: 10, Keys: []string{"pk", "gpk"}, Now: func() time.Time { return now },
		Partition: func(key string) string {
			if key == "gpk=a" || key == "gpk=b" || key == "pk=ab" {
				return "gpk=shared"
			}
			return ""
		}}
	held := 0
	for i := range 20 {
		if m.take(keyed(fmt.Sprintf("t%d", i), []string{"a", "b"}[i%2])) {
			held++
		}
	}
	if held != 10 {
		t.Fatalf("%d of 20 writes to two keys of one partition held, want 10 over its 10", held)
	}
	for i := range 10 {
		if m.take(keyed(fmt.Sprintf("u%d", i), "c")) {
			t.Fatalf("write %d to a key of its own partition was held", i)
		}
	}
	now = now.Add(time.Second)
	for i := range 10 {
		if m.take(keyed("ab", "a")) {
			t.Fatalf("write %d, whose two keys share a partition, was held: it paid twice", i)
		}
	}
}
