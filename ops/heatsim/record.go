package heatsim

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/shardline/shardline/internal/schema"
)

// records holds an adaptive design's shard records (and the catalogue
// entries the registry writes beside them) in memory: the table a
// shardmap.Registry reads and writes, so that the simulator schedules raises
// by the registry's own rules rather than a copy of them.
//
// It does not check conditions. A simulated second's writers act one after
// the other, each reading the record before it writes it, so the version
// check the registry's writes carry could never fail here; the tests compare
// the schedules it ends with to a registry's on DynamoDB Local.
type records map[[2]string]map[string]types.AttributeValue

func recordKey(m map[string]types.AttributeValue) [2]string {
	s := func(name string) string {
		v, _ := m[name].(*types.AttributeValueMemberS)
		if v == nil {
			return ""
		}
		return v.Value
	}
	return [2]string{s(schema.PK), s(schema.SK)}
}

// GetItem is DynamoDB's, for a key.
func (r records) GetItem(_ context.Context, in *dynamodb.GetItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	return &dynamodb.GetItemOutput{Item: r[recordKey(in.Key)]}, nil
}

// BatchGetItem is DynamoDB's, every key processed.
func (r records) BatchGetItem(_ context.Context, in *dynamodb.BatchGetItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	out := &dynamodb.BatchGetItemOutput{Responses: map[string][]map[string]types.AttributeValue{}}
	for table, ka := range in.RequestItems {
		for _, k := range ka.Keys {
			if it, ok := r[recordKey(k)]; ok {
				out.Responses[table] = append(out.Responses[table], it)
			}
		}
	}
	return out, nil
}

// PutItem is DynamoDB's, without its condition.
func (r records) PutItem(_ context.Context, in *dynamodb.PutItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	r[recordKey(in.Item)] = in.Item
	return &dynamodb.PutItemOutput{}, nil
}
