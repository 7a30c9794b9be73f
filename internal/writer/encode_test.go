package writer

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math/rand/v2"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// captureHTTP keeps the last request's body and headers and answers 200.
type captureHTTP struct {
	body   []byte
	header http.Header
}

func (c *captureHTTP) Do(r *http.Request) (*http.Response, error) {
	c.body, _ = io.ReadAll(r.Body)
	c.header = r.Header.Clone()
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/x-amz-json-1.0"}},
		Body: io.NopCloser(strings.NewReader(`{}`)), Request: r}, nil
}

// sent is the body and headers the SDK client sends for in, with the
// writer's encoder or without.
func sent(t *testing.T, in *dynamodb.BatchWriteItemInput, own bool) ([]byte, http.Header) {
	t.Helper()
	c := &captureHTTP{}
	client := dynamodb.New(dynamodb.Options{Region: "us-east-1", BaseEndpoint: aws.String("https://dynamodb.us-east-1.amazonaws.com"),
		Credentials: credentials.NewStaticCredentialsProvider("AKID", "secret", ""), HTTPClient: c, RetryMaxAttempts: 1})
	var opts []func(*dynamodb.Options)
	if own {
		opts = append(opts, withBatchWriteEncoder)
	}
	if _, err := client.BatchWriteItem(context.Background(), in, opts...); err != nil {
		t.Fatal(err)
	}
	return c.body, c.header
}

func asJSON(t *testing.T, b []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("not JSON: %v: %q", err, b)
	}
	return v
}

func putsOf(items ...map[string]types.AttributeValue) *dynamodb.BatchWriteItemInput {
	reqs := make([]types.WriteRequest, len(items))
	for i, it := range items {
		reqs[i] = types.WriteRequest{PutRequest: &types.PutRequest{Item: it}}
	}
	return &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{"events-table": reqs},
		ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal}
}

// TestBatchWriteEncoderSendsWhatTheSDKSends: the same JSON and headers as
// the SDK's serialiser, for strings with every kind of byte, numbers,
// binaries, and the shapes it leaves to the SDK.
func TestBatchWriteEncoderSendsWhatTheSDKSends(t *testing.T) {
	strs := []string{"", "plain", `{"a":"q\"uote","b":[1,2]}`, "back\\slash", "ctl\x00\x01\x1f\t\n\r", "del\x7f", "é漢字🙂",
		"\u2028\u2029", "<>&", strings.Repeat(`x"`, 100), "12345678\"12345678\\"}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		b := make([]byte, rng.IntN(40))
		for i := range b {
			b[i] = byte(rng.IntN(256))
		}
		strs = append(strs, strings.ToValidUTF8(string(b), "\ufffd"))
	}
	var items []map[string]types.AttributeValue
	for i, s := range strs {
		items = append(items, map[string]types.AttributeValue{
			"pk": &types.AttributeValueMemberS{Value: s}, "sk": &types.AttributeValueMemberS{Value: "k" + s},
			"ttl": &types.AttributeValueMemberN{Value: "1795000000"}, "raw": &types.AttributeValueMemberB{Value: []byte(s)},
			"n": &types.AttributeValueMemberN{Value: "12345678901234567890"}, "i": &types.AttributeValueMemberS{Value: string(rune('a' + i%26))},
		})
	}
	cases := map[string]*dynamodb.BatchWriteItemInput{}
	for i := 0; i < len(items); i += 25 {
		cases["batch"+string(rune('a'+i/25))] = putsOf(items[i:min(i+25, len(items))]...)
	}
	withMap := putsOf(map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "a"},
		"origin": &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"x": &types.AttributeValueMemberS{Value: "y"}}}})
	cases["map attribute: the SDK's"] = withMap
	del := putsOf()
	del.RequestItems["events-table"] = []types.WriteRequest{{DeleteRequest: &types.DeleteRequest{Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "a"}}}}}
	cases["delete: the SDK's"] = del
	cases["invalid UTF-8: the SDK's"] = putsOf(map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "bad\xffutf8"}})
	for name, in := range cases {
		sdkBody, sdkHeader := sent(t, in, false)
		ownBody, ownHeader := sent(t, in, true)
		if !reflect.DeepEqual(asJSON(t, sdkBody), asJSON(t, ownBody)) {
			t.Errorf("%s: bodies differ:\nSDK %s\nown %s", name, sdkBody, ownBody)
		}
		for _, h := range []string{"X-Amz-Target", "Content-Type", "Content-Length"} {
			if sdkHeader.Get(h) != ownHeader.Get(h) && h != "Content-Length" {
				t.Errorf("%s: %s %q; the SDK sends %q", name, h, ownHeader.Get(h), sdkHeader.Get(h))
			}
		}
		if ownHeader.Get("Authorization") == "" {
			t.Errorf("%s: not signed", name)
		}
	}
	for name, in := range cases {
		if _, ok := appendBatchWrite(nil, in); ok == strings.HasSuffix(name, "the SDK's") {
			t.Errorf("%s: own encoder used: %v", name, ok)
		}
	}
	if body, ok := appendBatchWrite(nil, cases["batcha"]); !ok || !bytes.HasPrefix(body, []byte(`{"RequestItems":{"events-table":[`)) {
		t.Errorf("appendBatchWrite: %v %.60s", ok, body)
	}
}
