package shardmap

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/shardline/shardline/internal/schema"
)

// TestDecodeDay: a day's two items read together; a day without an hour
// index (written before it existed) hides no hour from a reader.
func TestDecodeDay(t *testing.T) {
	record := map[string]types.AttributeValue{
		schema.SK:       &types.AttributeValueMemberS{Value: metaSK},
		schema.Version:  &types.AttributeValueMemberN{Value: "1"},
		schema.Schedule: &types.AttributeValueMemberL{Value: []types.AttributeValue{&types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"from": num(0), "n": num(4), "g": num(2)}}}},
	}
	hours := map[string]types.AttributeValue{
		schema.SK:    &types.AttributeValueMemberS{Value: hoursSK},
		schema.Hours: &types.AttributeValueMemberNS{Value: []string{"3", "17"}},
		"n17":        &types.AttributeValueMemberN{Value: "250"},
	}
	d, err := DecodeDay([]map[string]types.AttributeValue{record, hours})
	if err != nil {
		t.Fatal(err)
	}
	if d.Sched.MaxShards() != 4 || !d.Indexed || !d.Marked(3) || d.Marked(4) || d.Hint(17) != 250 || d.Hint(3) != -1 || d.Hint(4) != 0 {
		t.Errorf("day %+v", d)
	}
	old, err := DecodeDay([]map[string]types.AttributeValue{record})
	if err != nil {
		t.Fatal(err)
	}
	for h := range 24 {
		if !old.Marked(h) || old.Hint(h) != -1 {
			t.Fatalf("a day without an hour index: hour %d marked %v, hint %d", h, old.Marked(h), old.Hint(h))
		}
	}
	if none, err := DecodeDay(nil); err != nil || none.Sched != nil {
		t.Errorf("no items: %+v %v", none, err)
	}
	if _, err := DecodeDay([]map[string]types.AttributeValue{record, {schema.SK: &types.AttributeValueMemberS{Value: hoursSK}, schema.Hours: &types.AttributeValueMemberNS{Value: []string{"24"}}}}); err == nil {
		t.Error("hour 24 accepted")
	}
}
