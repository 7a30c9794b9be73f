package faultproxy

import (
	"encoding/base64"
	"encoding/json"

	"github.com/shardline/shardline/internal/item"
)

// writeUnits is what writing item costs: a unit per kilobyte or part of
// one, at least one.
func writeUnits(attrs map[string]json.RawMessage) float64 {
	return float64(item.WriteUnits(itemBytes(attrs)))
}

// binBytes is the length of a binary value, base64 in DynamoDB JSON.
func binBytes(s string) int {
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return len(s)
	}
	return len(b)
}

// itemBytes is the size of an item in DynamoDB JSON as DynamoDB counts it
// (item.Bytes for the SDK's types): each attribute's name and value.
func itemBytes(attrs map[string]json.RawMessage) int {
	n := 0
	for name, raw := range attrs {
		n += len(name) + valueBytes(raw)
	}
	return n
}

// valueBytes is the size of one value in DynamoDB JSON, such as {"S":"x"}.
func valueBytes(raw json.RawMessage) int {
	var v struct {
		S, N, B    *string
		BOOL       *bool
		NULL       *bool
		SS, NS, BS []string
		L          []json.RawMessage
		M          map[string]json.RawMessage
	}
	if json.Unmarshal(raw, &v) != nil {
		return len(raw)
	}
	n := 0
	switch {
	case v.S != nil:
		n = len(*v.S)
	case v.N != nil:
		n = item.NumberBytes(*v.N)
	case v.B != nil:
		n = binBytes(*v.B)
	case v.BOOL != nil, v.NULL != nil:
		n = 1
	case v.SS != nil:
		for _, s := range v.SS {
			n += len(s)
		}
	case v.NS != nil:
		for _, s := range v.NS {
			n += item.NumberBytes(s)
		}
	case v.BS != nil:
		for _, s := range v.BS {
			n += binBytes(s)
		}
	case v.L != nil:
		n = 3
		for _, e := range v.L {
			n += 1 + valueBytes(e)
		}
	case v.M != nil:
		n = 3
		for k, e := range v.M {
			n += 1 + len(k) + valueBytes(e)
		}
	}
	return n
}
