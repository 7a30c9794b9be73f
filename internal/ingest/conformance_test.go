package ingest

import (
	"context"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

// conformanceFile is one file of the CloudEvents JSON format conformance
// corpus (testdata/conformance, its README says where it came from).
type conformanceFile struct {
	TestType string            `json:"testType"`
	Tests    []conformanceCase `json:"tests"`
}

// conformanceCase is one test of the corpus.
type conformanceCase struct {
	ID       string          `json:"id"`
	SampleID string          `json:"sampleId"`
	TestType string          `json:"testType"`
	Event    json.RawMessage `json:"event"`
	Batch    json.RawMessage `json:"batch"`
}

// Where shardline answers otherwise than the corpus expects, on purpose
// (docs/api.md, "Conformance"): the test checks the deviation instead.
var (
	// acceptedInvalid are invalid events shardline accepts.
	acceptedInvalid = map[string]string{
		"invalidNoSpecVersion": "specversion is optional in shardline (DESIGN.md) and taken as 1.0",
	}
	// invalidInBatch is, for each invalid batch, which of its events are
	// invalid: shardline judges a batch event by event, stores the valid
	// ones and rejects the others, rather than refuse the batch whole.
	invalidInBatch = map[string][]int{
		"invalidBatchMixedSpecVersions":           {1},
		"invalidBatchContainingInvalidCloudEvent": {0},
		"invalidBatchContainingNonObject":         {0},
	}
)

// goldenSamples are the corpus' sample events (testdata/conformance/
// SAMPLES.md), as shardline stores them, times moved as the corpus' were.
// SAMPLES.md gives simpleTextData the id "simpleData"; its test event,
// which the test sends, says "simpleTextData".
var goldenSamples = func() map[string]map[string]any {
	minimal := func(id string, more map[string]any) map[string]any {
		m := map[string]any{"specversion": "1.0", "id": id, "type": "io.cloudevents.test", "source": "https://cloudevents.io"}
		maps.Copy(m, more)
		return m
	}
	at := "2026-11-21T17:31:00Z"
	return map[string]map[string]any{
		"minimal":                   minimal("minimal", nil),
		"minimalWithTime":           minimal("minimalWithTime", map[string]any{"time": at}),
		"minimalWithRelativeSource": minimal("minimalWithRelativeSource", map[string]any{"source": "#fragment"}),
		"allCore": minimal("allCore", map[string]any{"datacontenttype": "text/plain",
			"dataschema": "https://cloudevents.io/dataschema", "subject": "tests", "time": at}),
		"simpleTextData": minimal("simpleTextData", map[string]any{"datacontenttype": "text/plain", "data": "Simple text"}),
		"allExtensionTypes": minimal("allExtensionTypes", map[string]any{"extinteger": json.Number("10"), "extboolean": true,
			"extstring": "text", "extbinary": "TWE=", "exttimestamp": "2023-03-31T15:12:00Z",
			"exturi": "https://cloudevents.io", "exturiref": "//authority/path"}),
	}
}()

// goldenBatches are the corpus' sample batches, by their events' samples.
var goldenBatches = map[string][]string{
	"empty":                       {},
	"minimal":                     {"minimal"},
	"minimal2":                    {"minimal", "minimal"},
	"minimalAndAllCore":           {"minimal", "allCore"},
	"minimalAndAllExtensionTypes": {"minimal", "allExtensionTypes"},
}

// TestCloudEventsConformance sends every case of the CloudEvents JSON
// format conformance corpus (43: 10 valid events, 25 invalid, 5 valid
// batches, 3 invalid) to POST /v1/events as a producer would, one event
// as application/cloudevents+json and a batch as
// application/cloudevents-batch+json, each on a fresh table, and checks the
// verdict the corpus expects: a valid event or batch is accepted whole and
// stored as its golden sample; an invalid event is rejected (400, naming a
// field of it) and quarantined, never stored.
func TestCloudEventsConformance(t *testing.T) {
	n := 0
	for _, name := range []string{"valid-events", "invalid-events", "valid-batches", "invalid-batches"} {
		b, err := os.ReadFile(filepath.Join("testdata", "conformance", name+".json"))
		if err != nil {
			t.Fatal(err)
		}
		var f conformanceFile
		if err := json.Unmarshal(b, &f); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, c := range f.Tests {
			n++
			kind := cmpOr(c.TestType, f.TestType)
			t.Run(c.ID, func(t *testing.T) { checkConformance(t, kind, c) })
		}
	}
	if n != 43 {
		t.Fatalf("%d cases, want the corpus' 43", n)
	}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// checkConformance sends c and checks its verdict.
func checkConformance(t *testing.T, kind string, c conformanceCase) {
	e := newEnv(t, false, nil)
	req := post(string(c.Event), "application/cloudevents+json")
	if kind == "ValidBatch" || kind == "InvalidBatch" {
		req = post(string(c.Batch), "application/cloudevents-batch+json")
	}
	resp, err := e.h.HTTP(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	r := decodeResponse(t, resp.Body)
	switch kind {
	case "ValidSingleEvent":
		wantAccepted(t, resp, r, 1)
		e.wantStored(t, c.SampleID)
	case "ValidBatch":
		samples := goldenBatches[c.SampleID]
		wantAccepted(t, resp, r, len(samples))
		e.wantStored(t, samples...)
	case "InvalidSingleEvent":
		if why, ok := acceptedInvalid[c.ID]; ok {
			t.Logf("deviation: accepted, as %s", why)
			wantAccepted(t, resp, r, 1)
			return
		}
		wantRejected(t, resp, r, c.Event, []int{0})
		if n, q := len(e.itemsIn(t, "E#")), len(e.itemsIn(t, "Q#")); n != 0 || q != 1 {
			t.Fatalf("%d stored, %d quarantined; want 0 and 1", n, q)
		}
	case "InvalidBatch":
		var evs []json.RawMessage
		if err := json.Unmarshal(c.Batch, &evs); err != nil {
			t.Fatal(err)
		}
		bad := invalidInBatch[c.ID]
		if len(bad) == 0 {
			t.Fatalf("no invalid events named for %s", c.ID)
		}
		for _, i := range bad {
			wantRejected(t, resp, r, evs[i], bad)
		}
		if r.Accepted != len(evs)-len(bad) {
			t.Fatalf("accepted %d of the batch's %d valid events", r.Accepted, len(evs)-len(bad))
		}
	default:
		t.Fatalf("test type %q", kind)
	}
}

// wantAccepted checks that all n events were accepted.
func wantAccepted(t *testing.T, resp events.APIGatewayV2HTTPResponse, r Response, n int) {
	t.Helper()
	if resp.StatusCode != 202 || r.Accepted != n || len(r.Rejected) != 0 {
		t.Fatalf("%d %s; want 202 with %d accepted", resp.StatusCode, resp.Body, n)
	}
}

// wantRejected checks that the events at bad, and only they, were
// rejected, each with an error naming an attribute of event (or the event
// itself).
func wantRejected(t *testing.T, resp events.APIGatewayV2HTTPResponse, r Response, event json.RawMessage, bad []int) {
	t.Helper()
	want := 202
	if r.Accepted == 0 {
		want = 400
	}
	var got []int
	for _, rj := range r.Rejected {
		got = append(got, rj.Index)
	}
	if resp.StatusCode != want || !slices.Equal(got, bad) {
		t.Fatalf("%d %s; want %v rejected", resp.StatusCode, resp.Body, bad)
	}
	var members map[string]any
	_ = json.Unmarshal(event, &members) // not an object: no members
	for _, rj := range r.Rejected {
		field, _, _ := strings.Cut(rj.Error, ": ")
		if _, ok := members[field]; !ok && !slices.Contains([]string{"event", "id", "source", "type"}, field) {
			t.Fatalf("rejection %q names no attribute of %s", rj.Error, event)
		}
	}
}

// wantStored checks that the table holds exactly the golden samples named
// (a sample named twice is one item: an event is stored once).
func (e *env) wantStored(t *testing.T, samples ...string) {
	t.Helper()
	want := map[string]map[string]any{}
	for _, s := range samples {
		g, ok := goldenSamples[s]
		if !ok {
			t.Fatalf("no golden sample %q", s)
		}
		want[g["id"].(string)] = g
	}
	items := e.itemsIn(t, "E#")
	if len(items) != len(want) {
		t.Fatalf("%d events stored, want %d", len(items), len(want))
	}
	for _, it := range items {
		got := storedEvent(t, it)
		g := want[got["id"].(string)]
		if _, ok := g["time"]; !ok { // stamped with the request's time
			g = maps.Clone(g)
			g["time"] = fixtureNow.Format(time.RFC3339)
		}
		if !equalJSON(got, g) {
			t.Fatalf("stored %v\n  want %v", got, g)
		}
	}
}

// equalJSON compares two decoded JSON objects.
func equalJSON(a, b map[string]any) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}
