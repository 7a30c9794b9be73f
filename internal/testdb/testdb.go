// Package testdb gives a test binary one DynamoDB Local, in memory, and a
// fresh table per test. Tests that use it fail, never skip, when Java or the
// jar is missing: a green run must mean the storage tests ran.
package testdb

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/shardline/shardline/internal/ddbclient"
	"github.com/shardline/shardline/internal/ddblocal"
	"github.com/shardline/shardline/internal/schema"
)

var (
	server *ddblocal.Server
	tables atomic.Int64
)

// Main starts DynamoDB Local, runs the tests and stops it. Call it from
// TestMain.
func Main(m *testing.M) {
	s, err := ddblocal.Start(context.Background(), ddblocal.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "testdb:", err)
		os.Exit(1)
	}
	server = s
	code := m.Run()
	s.Close()
	os.Exit(code)
}

// Endpoint is DynamoDB Local's URL.
func Endpoint(t testing.TB) string {
	t.Helper()
	if server == nil {
		t.Fatal("testdb: DynamoDB Local is not running; call testdb.Main from TestMain")
	}
	return server.Endpoint
}

// Client is a client of DynamoDB Local at endpoint (which may be a proxy in
// front of it), configured as the functions configure theirs.
func Client(t testing.TB, endpoint string) *dynamodb.Client {
	t.Helper()
	if server == nil {
		t.Fatal("testdb: DynamoDB Local is not running; call testdb.Main from TestMain")
	}
	return ddbclient.Static(endpoint, 32)
}

// Table creates a new, empty table with shardline's schema and returns its
// name.
func Table(t testing.TB) string {
	t.Helper()
	name := fmt.Sprintf("t%d-%s", tables.Add(1), sanitize(t.Name()))
	if len(name) > 200 {
		name = name[:200]
	}
	if err := schema.Create(context.Background(), Client(t, Endpoint(t)), name); err != nil {
		t.Fatalf("create table: %v", err)
	}
	return name
}

func sanitize(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			b[i] = '-'
		}
	}
	return string(b)
}
