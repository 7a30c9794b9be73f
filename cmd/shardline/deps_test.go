package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestOperatorBinaryIsTheOperators: the operator's binary builds in no
// package under bench/ or local/. The benchmark harness, the heat
// simulator's command and the local pipeline (DynamoDB Local, kinesalite,
// s3rver) are their own binaries (bench/cmd/..., local/cmd/...); a platform
// engineer who installs shardline gets the operator's commands only. Its
// tests may still drive the local engines.
func TestOperatorBinaryIsTheOperators(t *testing.T) {
	const module = "github.com/shardline/shardline/"
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", ".").Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			t.Fatalf("go list -deps: %v\n%s", err, ee.Stderr)
		}
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(out))
	ours := 0
	for _, p := range deps {
		rel, ok := strings.CutPrefix(p, module)
		if !ok {
			continue
		}
		ours++
		if strings.HasPrefix(rel, "bench/") || strings.HasPrefix(rel, "local/") {
			t.Errorf("cmd/shardline builds in %s: the operator's binary must not carry the bench or the local pipeline (move the command to bench/cmd or local/cmd, or what both need to a package of its own)", rel)
		}
	}
	if ours < 5 {
		t.Fatalf("go list -deps found too little: %v", deps)
	}
}
