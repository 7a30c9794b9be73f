package functions

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/shardline/shardline/"

// TestShippedSetIsInternal: every package of this module that a Lambda
// function builds in lies under internal/ or pkg/, and every package under
// internal/ is built into some function. internal/ is then exactly what
// ships; local engines, test engines, the bench and the operator's tools
// live in folders named for who uses them (docs/architecture.md, Layout).
func TestShippedSetIsInternal(t *testing.T) {
	deps := goList(t, "-deps", "./...")
	shipped := map[string]bool{}
	for _, p := range deps {
		rel, ours := strings.CutPrefix(p, module)
		if !ours {
			continue
		}
		shipped[rel] = true
		switch {
		case strings.HasPrefix(rel, "functions/"), rel == "functions":
		case strings.HasPrefix(rel, "internal/"), strings.HasPrefix(rel, "pkg/"):
		default:
			t.Errorf("a function depends on %s, which lies outside internal/ and pkg/: shipped code must not import local, test, bench or tool code", rel)
		}
	}
	if !shipped["internal/ingest"] || !shipped["pkg/bucketing"] {
		t.Fatalf("go list -deps found too little: %v", deps)
	}
	for _, p := range goList(t, "../internal/...") {
		rel := strings.TrimPrefix(p, module)
		if !shipped[rel] {
			t.Errorf("%s lies under internal/ but no function ships it: move it to the folder of its audience (local/, testkit/, ops/, bench/, cmd/shardline/internal/)", rel)
		}
	}
}

// goList runs go list with args in this directory and returns the import
// paths it prints.
func goList(t *testing.T, args ...string) []string {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list", "-f", "{{.ImportPath}}"}, args...)...)
	out, err := cmd.Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			t.Fatalf("go list %v: %v\n%s", args, err, ee.Stderr)
		}
		t.Fatalf("go list %v: %v", args, err)
	}
	paths := strings.Fields(string(out))
	slices.Sort(paths)
	return paths
}

// TestIngestDoesNotLinkTheReplay: the quarantine replay's reingest is the
// operator's (cmd/shardline/internal/replay), reaching ingest through
// ingest.Pass; the ingest function does not build it in.
func TestIngestDoesNotLinkTheReplay(t *testing.T) {
	deps := goList(t, "-deps", "./ingest")
	if !slices.Contains(deps, module+"internal/ingest") {
		t.Fatalf("go list -deps ./ingest found too little: %v", deps)
	}
	for _, p := range deps {
		if rel := strings.TrimPrefix(p, module); strings.HasPrefix(rel, "cmd/") || strings.HasPrefix(rel, "ops/") {
			t.Errorf("the ingest function builds in %s, the operator's code", rel)
		}
	}
}

// TestCountsFunctionsDoNotLinkThePreviousCounter: the previous release's
// per-source counter (ops/sourcecounter) is the operator's, for the redrive
// of batches given up before a stream shard's chain began, and the tests';
// the functions that ship internal/counts do not build it in.
func TestCountsFunctionsDoNotLinkThePreviousCounter(t *testing.T) {
	deps := goList(t, "-deps", "./counter", "./countfold", "./query")
	if !slices.Contains(deps, module+"internal/counts") {
		t.Fatalf("go list -deps ./counter ./countfold ./query found too little: %v", deps)
	}
	if slices.Contains(deps, module+"ops/sourcecounter") {
		t.Errorf("a counts function builds in ops/sourcecounter, the previous release's counter")
	}
}
