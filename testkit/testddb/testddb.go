// Package testddb gives a test binary one DynamoDB Local, in memory, and a
// fresh table per test. Tests that use it fail, never skip, when Java or the
// jar is missing: a green run must mean the storage tests ran.
package testddb

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/shardline/shardline/internal/ddbclient"
	"github.com/shardline/shardline/internal/schema"
	"github.com/shardline/shardline/local/ddblocal"
	"github.com/shardline/shardline/pkg/bucketing"
)

var (
	dynamo = NewRunning("DynamoDB Local", "testddb.Main")
	tables atomic.Int64
)

// Main starts DynamoDB Local, runs the tests and stops it. Call it from
// TestMain.
func Main(m *testing.M) { MainWith(m) }

// Engine starts another local engine a test binary needs (kinesalite, a
// local SQS) and returns how to stop it.
type Engine func(context.Context) (stop func(), err error)

// MainWith is Main for a test binary that needs other engines too: they
// start beside DynamoDB Local, each once, and a test binary whose engine
// cannot start fails.
func MainWith(m *testing.M, engines ...Engine) {
	engines = append([]Engine{startDynamoDB}, engines...)
	stops := make([]func(), len(engines))
	errs := make([]error, len(engines))
	var wg sync.WaitGroup
	for i, start := range engines {
		wg.Go(func() { stops[i], errs[i] = start(context.Background()) })
	}
	wg.Wait()
	stopAll := func() {
		for _, stop := range stops {
			if stop != nil {
				stop()
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		stopAll()
		fmt.Fprintln(os.Stderr, "testddb:", err)
		os.Exit(1)
	}
	code := m.Run()
	stopAll()
	os.Exit(code)
}

// SharedEnv names the environment variable that points the test binaries
// at a DynamoDB Local already running (make test starts one for all of
// them, testkit/cmd/withddb): a binary then starts none, and keeps its
// tables in a database of its own, under an access key of its own
// (ddbclient.Local), so binaries running at once neither see each other's
// tables nor wait on each other's database. Unset, each binary starts its
// own.
const SharedEnv = "SHARDLINE_TEST_DYNAMODB"

func startDynamoDB(ctx context.Context) (func(), error) {
	if shared := os.Getenv(SharedEnv); shared != "" {
		// Letters and digits only: DynamoDB Local refuses other keys. The
		// time tells apart binaries that are given the same process id.
		endpoint, err := ddbclient.WithKey(shared, fmt.Sprintf("t%dn%d", os.Getpid(), time.Now().UnixNano()))
		if err != nil {
			return nil, fmt.Errorf("%s: %w; unset it to start one per test binary", SharedEnv, err)
		}
		dynamo.HoldURL(endpoint)
		return func() {}, nil
	}
	s, err := ddblocal.Start(ctx, ddblocal.Options{})
	if err != nil {
		return nil, err
	}
	return dynamo.Hold(s.Proc), nil
}

// Endpoint is DynamoDB Local's URL.
func Endpoint(t testing.TB) string {
	t.Helper()
	return dynamo.Endpoint(t)
}

// Client is a client of DynamoDB Local at endpoint (which may be a proxy in
// front of it), configured as the functions configure theirs.
func Client(t testing.TB, endpoint string) *dynamodb.Client {
	t.Helper()
	dynamo.Endpoint(t) // fails the test when DynamoDB Local is not running
	return ddbclient.Static(endpoint, 32)
}

// Table creates a new, empty table with shardline's schema, but without
// its stream, and returns its name. Use StreamTable for a test that reads
// the stream.
//
// DynamoDB Local keeps a table's stream records for 24 hours, after the
// table is deleted too, and every later write in the process pays for them
// (it looks up its stream among them): one test's 20,000 writes made the next
// test's 12,000 ten times slower. Only tests that read the stream pay that.
func Table(t testing.TB) string {
	t.Helper()
	in := schema.CreateTableInput(name(t))
	in.StreamSpecification = nil
	return create(t, in, false)
}

// SharedTable is Table for a corpus that several tests read: it lives as
// long as the test binary, whichever test made it.
func SharedTable(t testing.TB) string {
	t.Helper()
	in := schema.CreateTableInput(name(t))
	in.StreamSpecification = nil
	return create(t, in, true)
}

// StreamTable creates a new, empty table exactly as the stack defines it,
// its stream included, and returns its name.
func StreamTable(t testing.TB) string {
	t.Helper()
	return create(t, schema.CreateTableInput(name(t)), false)
}

func name(t testing.TB) string {
	name := fmt.Sprintf("t%d-%s", tables.Add(1), sanitize(t.Name()))
	if len(name) > 200 {
		name = name[:200]
	}
	return name
}

// create creates the table of in; unless keep, it is deleted when the test
// ends.
func create(t testing.TB, in *dynamodb.CreateTableInput, keep bool) string {
	t.Helper()
	client := Client(t, Endpoint(t))
	if err := schema.CreateFrom(context.Background(), client, in); err != nil {
		t.Fatalf("create table: %v", err)
	}
	if keep {
		return aws.ToString(in.TableName)
	}
	// Free what DynamoDB Local holds of the table once the test is done.
	t.Cleanup(func() {
		if _, err := client.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: in.TableName}); err != nil {
			t.Errorf("delete table %s: %v", aws.ToString(in.TableName), err)
		}
	})
	return aws.ToString(in.TableName)
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

// Scan returns every item of table, read consistently, a page at a time
// as DynamoDB Local reads them fastest (ddblocal.Scan).
func Scan(t testing.TB, client *dynamodb.Client, table string) []map[string]types.AttributeValue {
	t.Helper()
	var items []map[string]types.AttributeValue
	in := &dynamodb.ScanInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true)}
	if err := ddblocal.Scan(context.Background(), client, in, func(out *dynamodb.ScanOutput) error {
		items = append(items, out.Items...)
		return nil
	}); err != nil {
		t.Fatalf("scan %s: %v", table, err)
	}
	return items
}

// Stored is what a table holds of events and quarantined records.
type Stored struct {
	// Events counts the event items by "source id time" (time in RFC 3339
	// with nanoseconds): a count above 1 is impossible by the key scheme,
	// and the test of "exactly once" is that each event is there and
	// nothing else is.
	Events      map[string]int
	Quarantined int
}

// StoredIn reads the events and quarantined records of table.
func StoredIn(t testing.TB, client *dynamodb.Client, table string) Stored {
	t.Helper()
	s := Stored{Events: map[string]int{}}
	for _, it := range Scan(t, client, table) {
		pkv, _ := it[schema.PK].(*types.AttributeValueMemberS)
		skv, _ := it[schema.SK].(*types.AttributeValueMemberS)
		if pkv == nil || skv == nil {
			continue
		}
		pk, err := bucketing.ParsePK(pkv.Value)
		if err != nil {
			continue // shard records, counters, the catalogue
		}
		if pk.Space == bucketing.Quarantine {
			s.Quarantined++
			continue
		}
		at, id, err := bucketing.ParseSortKey(skv.Value)
		if err != nil {
			t.Fatalf("event item with sort key %q: %v", skv.Value, err)
		}
		s.Events[EventKey(pk.Source, id, at)]++
	}
	return s
}

// EventKey is how Stored.Events names an event.
func EventKey(source, id string, at time.Time) string {
	return source + " " + id + " " + at.UTC().Format(time.RFC3339Nano)
}
