package writer

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// batchWriteProtocol is the SDK's protocol with the one request shape the
// writer sends on the hot path, BatchWriteItem of put requests whose
// attributes are strings, numbers and binaries, serialised by
// appendBatchWrite: the SDK's serialiser escapes each string byte by byte
// after its first quote, and an event's JSON is mostly quotes apart. Any
// other operation or shape, and any string that is not valid UTF-8, goes
// to the SDK's serialiser unchanged. A test holds the two to the same JSON.
type batchWriteProtocol struct {
	smithyhttp.ClientProtocol
}

// withBatchWriteEncoder installs batchWriteProtocol on a call's options.
func withBatchWriteEncoder(o *dynamodb.Options) {
	if o.Protocol != nil {
		if _, done := o.Protocol.(batchWriteProtocol); !done {
			o.Protocol = batchWriteProtocol{o.Protocol}
		}
	}
}

// SerializeRequest serialises a BatchWriteItem with appendBatchWrite,
// setting what awsjson's protocol sets, and anything else with the SDK's.
func (p batchWriteProtocol) SerializeRequest(ctx context.Context, schema *smithy.OperationSchema, in smithy.Serializable, req *smithyhttp.Request) error {
	bw, ok := in.(*dynamodb.BatchWriteItemInput)
	if !ok || schema.ID().Name != "BatchWriteItem" {
		return p.ClientProtocol.SerializeRequest(ctx, schema, in, req)
	}
	body, ok := appendBatchWrite(nil, bw)
	if !ok {
		return p.ClientProtocol.SerializeRequest(ctx, schema, in, req)
	}
	req.Method = http.MethodPost
	if len(req.URL.Path) == 0 {
		req.URL.Path = "/"
	}
	req.Header.Set("X-Amz-Target", "DynamoDB_20120810.BatchWriteItem")
	req.Header.Set("Content-Type", "application/x-amz-json-1.0")
	sreq, err := req.SetStream(bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("batch write request: set stream: %w", err)
	}
	*req = *sreq
	return nil
}

// appendBatchWrite appends the JSON of in to dst, or says it cannot: a
// delete request, an attribute type other than S, N or B, a field other
// than RequestItems and ReturnConsumedCapacity, or a string that is not
// valid UTF-8 (which the SDK replaces, and the SDK's serialiser should).
func appendBatchWrite(dst []byte, in *dynamodb.BatchWriteItemInput) ([]byte, bool) {
	if in.ReturnItemCollectionMetrics != "" {
		return nil, false
	}
	size := 64
	for _, reqs := range in.RequestItems {
		size += len(reqs) * 64
		for _, r := range reqs {
			if r.PutRequest == nil || r.DeleteRequest != nil {
				return nil, false
			}
			for k, v := range r.PutRequest.Item {
				size += len(k) + 16
				if s, ok := v.(*types.AttributeValueMemberS); ok {
					size += len(s.Value) + len(s.Value)/4 // room for some escapes
				}
			}
		}
	}
	if dst == nil {
		dst = make([]byte, 0, size)
	}
	dst = append(dst, `{"RequestItems":{`...)
	first := true
	var ok bool
	for table, reqs := range in.RequestItems {
		if !first {
			dst = append(dst, ',')
		}
		first = false
		if dst, ok = appendString(dst, table); !ok {
			return nil, false
		}
		dst = append(dst, ":["...)
		for n, r := range reqs {
			if n > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, `{"PutRequest":{"Item":{`...)
			if dst, ok = appendItem(dst, r.PutRequest.Item); !ok {
				return nil, false
			}
			dst = append(dst, "}}}"...)
		}
		dst = append(dst, ']')
	}
	dst = append(dst, '}')
	if in.ReturnConsumedCapacity != "" {
		dst = append(dst, `,"ReturnConsumedCapacity":`...)
		if dst, ok = appendString(dst, string(in.ReturnConsumedCapacity)); !ok {
			return nil, false
		}
	}
	return append(dst, '}'), true
}

// appendItem appends an item's attributes, without the braces.
func appendItem(dst []byte, attrs map[string]types.AttributeValue) ([]byte, bool) {
	first := true
	var ok bool
	for k, v := range attrs {
		if !first {
			dst = append(dst, ',')
		}
		first = false
		if dst, ok = appendString(dst, k); !ok {
			return nil, false
		}
		switch v := v.(type) {
		case *types.AttributeValueMemberS:
			dst = append(dst, `:{"S":`...)
			dst, ok = appendString(dst, v.Value)
		case *types.AttributeValueMemberN:
			dst = append(dst, `:{"N":`...)
			dst, ok = appendString(dst, v.Value)
		case *types.AttributeValueMemberB:
			dst = append(dst, `:{"B":"`...)
			dst = appendBase64(dst, v.Value)
			dst = append(dst, '"')
		default:
			return nil, false
		}
		if !ok {
			return nil, false
		}
		dst = append(dst, '}')
	}
	return dst, true
}

// appendString appends s as a JSON string, copying runs of bytes that
// need no escape whole. An event's JSON has a quote every few bytes, so a
// table lookup per byte beats testing eight bytes at a time. It fails on
// invalid UTF-8.
func appendString(dst []byte, s string) ([]byte, bool) {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if plain[c] {
			i++
			continue
		}
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				return nil, false
			}
			i += size
			continue
		}
		dst = append(dst, s[start:i]...)
		switch c {
		case '"', '\\':
			dst = append(dst, '\\', c)
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		default:
			const hex = "0123456789abcdef"
			dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		}
		i++
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"'), true
}

// plain tells the bytes a JSON string holds as they are: printable ASCII
// but the quote and the backslash (DEL is escaped, as the SDK does).
var plain = func() (t [256]bool) {
	for c := 0x20; c < 0x7f; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// appendBase64 appends b in standard base64, as the SDK sends a binary.
func appendBase64(dst, b []byte) []byte {
	return base64.StdEncoding.AppendEncode(dst, b)
}
