package catalog_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/shardline/shardline/internal/catalog"
	"github.com/shardline/shardline/internal/schema"
	"github.com/shardline/shardline/testkit/testddb"
)

// readRecorder is a ReadAPI that keeps every source DynamoDB returned.
type readRecorder struct {
	catalog.ReadAPI
	mu   sync.Mutex
	read []string
}

func (r *readRecorder) Query(ctx context.Context, in *dynamodb.QueryInput, o ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	out, err := r.ReadAPI.Query(ctx, in, o...)
	if err == nil {
		r.mu.Lock()
		for _, it := range out.Items {
			if v, ok := it[schema.SK].(*types.AttributeValueMemberS); ok {
				r.read = append(r.read, v.Value)
			}
		}
		r.mu.Unlock()
	}
	return out, err
}

// TestListPrefixedReadsOnlyThePrefixes: a tenant's listing, paged one
// source at a time, lists exactly its sources once each, in order, and
// DynamoDB returns not one entry of another source on the way.
func TestListPrefixedReadsOnlyThePrefixes(t *testing.T) {
	table := testddb.Table(t)
	mine := []string{"team-a/", "team-a/x", "team-a/y/z", "urn:a:1"}
	others := []string{"team-a", "team-ab/x", "team-b/x", "urn:b:1", "a", "zz"}
	plan := map[string][]int{}
	for _, s := range append(append([]string{}, mine...), others...) {
		plan[s] = []int{0, 1}
	}
	write(t, table, plan)
	rec := &readRecorder{ReadAPI: testddb.Client(t, testddb.Endpoint(t))}
	prefixes := []string{"urn:a:", "team-a/", "team-a/y/"} // the last is redundant
	var got []string
	after := ""
	for range 20 {
		p, err := catalog.ListPrefixed(context.Background(), rec, table, days(2), prefixes, after, 1)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range p.Entries {
			got = append(got, e.Source)
			if len(e.Days) != 2 {
				t.Errorf("%s: days %v", e.Source, e.Days)
			}
		}
		if after = p.Next; after == "" {
			break
		}
	}
	if strings.Join(got, ",") != strings.Join(mine, ",") {
		t.Errorf("listed %q, want %q", got, mine)
	}
	for _, s := range rec.read {
		if !strings.HasPrefix(s, "team-a/") && !strings.HasPrefix(s, "urn:a:") {
			t.Errorf("read the entry of %q, another tenant's", s)
		}
	}
	if len(rec.read) == 0 {
		t.Error("nothing was read")
	}
}
