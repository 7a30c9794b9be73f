package openapitest

import (
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/shardline/shardline/internal/apigw"
	"github.com/shardline/shardline/internal/catalog"
	"github.com/shardline/shardline/internal/cloudevent"
	"github.com/shardline/shardline/internal/counts"
	"github.com/shardline/shardline/internal/ingest"
	"github.com/shardline/shardline/internal/query"
	"github.com/shardline/shardline/local/openapi"
)

// TestDocumentNamesTheCodesRoutes: the document's operations are exactly
// the routes the functions and the local server serve, each named with
// its function.
func TestDocumentNamesTheCodesRoutes(t *testing.T) {
	doc, err := Document()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			got = append(got, method+" "+path+" "+op.Extensions[functionKey].(string))
		}
	}
	want := []string{
		"POST " + ingest.Route + " ingest",
		"GET " + query.EventsRoute + " query",
		"GET " + query.QuarantineRoute + " query",
		"GET " + query.CountsRoute + " query",
		"GET " + query.SourcesRoute + " query",
		"GET " + openapi.Path + " devserver",
	}
	// Each tenant's routes, one per tenant in the stack, are one path
	// with a {tenant} parameter in the document.
	for _, r := range []string{"POST " + ingest.Route + " ingest", "GET " + query.EventsRoute + " query", "GET " + query.QuarantineRoute + " query",
		"GET " + query.CountsRoute + " query", "GET " + query.SourcesRoute + " query"} {
		want = append(want, strings.Replace(r, " /v1/", " "+apigw.TenantsPath+"{tenant}/", 1))
	}
	sort.Strings(got)
	sort.Strings(want)
	if !slices.Equal(got, want) {
		t.Fatalf("the document's operations are\n%q\nthe code serves\n%q", got, want)
	}
}

// TestDocumentHasTheCodesBounds: the limits the document states are the
// code's.
func TestDocumentHasTheCodesBounds(t *testing.T) {
	doc, err := Document()
	if err != nil {
		t.Fatal(err)
	}
	param := func(path, name string) *openapi3.Schema {
		p := doc.Paths.Value(path).Get.Parameters.GetByInAndName("query", name)
		if p == nil {
			t.Fatalf("GET %s has no parameter %s", path, name)
		}
		return p.Schema.Value
	}
	schema := func(name string) *openapi3.Schema { return doc.Components.Schemas[name].Value }

	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"events limit maximum", *param(query.EventsRoute, "limit").Max, query.MaxLimit},
		{"events limit default", param(query.EventsRoute, "limit").Default.(float64), query.DefaultLimit},
		{"quarantine limit maximum", *param(query.QuarantineRoute, "limit").Max, query.MaxLimit},
		{"sources limit maximum", *param(query.SourcesRoute, "limit").Max, catalog.MaxLimit},
		{"sources limit default", param(query.SourcesRoute, "limit").Default.(float64), catalog.DefaultLimit},
		{"events in a batch", float64(*schema("EventBatch").MaxItems), ingest.MaxRequestEvents},
		{"attribute bytes", float64(*schema("Attribute").MaxLength), cloudevent.MaxAttrBytes},
		{"source parameter bytes", float64(*param(query.EventsRoute, "source").MaxLength), cloudevent.MaxAttrBytes},
		{"buckets", float64(*schema("Counts").Properties["series"].Value.Items.Value.Properties["points"].Value.MaxItems), counts.MaxBuckets},
		{"series", float64(*schema("Counts").Properties["series"].Value.MaxItems), counts.MaxSeries + 1},
	} {
		if c.got != c.want {
			t.Errorf("%s: the document says %v, the code %v", c.name, c.got, c.want)
		}
	}
	var intervals []any
	for _, iv := range counts.Intervals {
		intervals = append(intervals, iv.Name)
	}
	if got := param(query.CountsRoute, "interval").Enum; !slices.Equal(got, intervals) {
		t.Errorf("intervals: the document says %v, the code %v", got, intervals)
	}
	if got := param(query.EventsRoute, "order").Enum; !slices.Equal(got, []any{string(query.Asc), string(query.Desc)}) {
		t.Errorf("orders: the document says %v", got)
	}
	if got := schema("EventsPlan").Properties["path"].Value.Enum; !slices.Equal(got, []any{query.PathGSI, query.PathScatter}) {
		t.Errorf("plan paths: the document says %v", got)
	}
}
