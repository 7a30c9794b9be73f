package ddblocal_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/shardline/shardline/internal/ddbclient"
	"github.com/shardline/shardline/internal/schema"
	"github.com/shardline/shardline/local/ddbstreams"
	"github.com/shardline/shardline/testkit/faultproxy"
	"github.com/shardline/shardline/testkit/testddb"
)

// TestAnEndpointsUserNamesADatabase: DynamoDB Local keeps a database per
// access key, and the clients made of an endpoint (ddbclient.Static,
// ddbstreams.Static, and through a fault proxy) sign with its user name, so
// a table made under one name is not seen under another, and is seen
// through the proxy. make test's binaries share one DynamoDB Local this way
// (testddb.SharedEnv).
func TestAnEndpointsUserNamesADatabase(t *testing.T) {
	ctx := context.Background()
	at := func(key string) string {
		e, err := ddbclient.WithKey(testddb.Endpoint(t), key)
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	// Keys of this run alone: the engine may be make test's, shared.
	n := time.Now().UnixNano()
	a, b := at(fmt.Sprintf("a%d", n)), at(fmt.Sprintf("b%d", n))
	in := schema.CreateTableInput("named")
	if err := schema.CreateFrom(ctx, ddbclient.Static(a, 4), in); err != nil {
		t.Fatalf("create under a: %v", err)
	}
	t.Cleanup(func() { ddbclient.Static(a, 4).DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: in.TableName}) })
	tables := func(endpoint string) []string {
		t.Helper()
		out, err := ddbclient.Static(endpoint, 4).ListTables(ctx, &dynamodb.ListTablesInput{})
		if err != nil {
			t.Fatalf("list tables at %s: %v", endpoint, err)
		}
		return out.TableNames
	}
	if got := tables(a); !slices.Contains(got, "named") {
		t.Errorf("under a: %v, want named", got)
	}
	if got := tables(b); slices.Contains(got, "named") {
		t.Errorf("under b: %v, want no named", got)
	}
	if got := tables(faultproxy.For(t, a).URL); !slices.Contains(got, "named") {
		t.Errorf("through a proxy of a: %v, want named", got)
	}
	streams, err := ddbstreams.Static(a).ListStreams(ctx, nil)
	if err != nil {
		t.Fatalf("list streams under a: %v", err)
	}
	if len(streams.Streams) != 1 || *streams.Streams[0].TableName != "named" {
		t.Errorf("streams under a: %+v, want named's", streams.Streams)
	}
}
