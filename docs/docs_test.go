// Package docs holds shardline's documentation; its tests keep the README
// and the pages here true to the code: the layout names every package, the
// README's test command is make test, and every relative link resolves.
package docs

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestLayoutNamesEveryPackage: the layout table of architecture.md names
// every Go package under the code folders.
func TestLayoutNamesEveryPackage(t *testing.T) {
	doc := read(t, "architecture.md")
	i := strings.Index(doc, "\n## Layout\n")
	if i < 0 {
		t.Fatal(`architecture.md has no "## Layout" section`)
	}
	layout := doc[i:]
	if j := strings.Index(layout[1:], "\n## "); j >= 0 {
		layout = layout[:j+1]
	}
	for _, dir := range packageDirs(t) {
		if !strings.Contains(layout, "`"+dir+"`") {
			t.Errorf("architecture.md's layout does not name the package `%s`", dir)
		}
	}
}

// packageDirs lists, relative to the module root, the directories under the
// code folders that hold Go files.
func packageDirs(t *testing.T) []string {
	var dirs []string
	for _, root := range []string{"bench", "cmd", "functions", "infra", "internal", "local", "ops", "pkg", "testkit"} {
		if _, err := os.Stat(filepath.Join("..", root)); os.IsNotExist(err) {
			continue
		}
		err := filepath.WalkDir(filepath.Join("..", root), func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && (d.Name() == "testdata" || d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".")) {
				return filepath.SkipDir
			}
			if d.IsDir() {
				if m, _ := filepath.Glob(filepath.Join(path, "*.go")); len(m) > 0 {
					rel, _ := filepath.Rel("..", path)
					dirs = append(dirs, filepath.ToSlash(rel))
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(dirs) < 10 {
		t.Fatalf("found only %d packages: %v", len(dirs), dirs)
	}
	return dirs
}

// TestReadmeTestCommand: the README's test command is `make test`, which
// .ci/run calls.
func TestReadmeTestCommand(t *testing.T) {
	if !regexp.MustCompile("(?m)^make test +#").MatchString(read(t, "../README.md")) {
		t.Error("the README does not give `make test` as its test command")
	}
}

var (
	link    = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	heading = regexp.MustCompile("(?m)^#{1,6} +(.+)$")
	fence   = regexp.MustCompile("(?ms)^```.*?^```")
)

// TestLinks: every relative link of the README and of the pages here leads
// to a file that exists, and to a heading of it when it names one.
func TestLinks(t *testing.T) {
	pages, _ := filepath.Glob("*.md")
	for _, page := range append(pages, "../README.md") {
		body := fence.ReplaceAllString(read(t, page), "")
		for _, m := range link.FindAllStringSubmatch(body, -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, anchor, _ := strings.Cut(target, "#")
			path := page
			if file != "" {
				path = filepath.Join(filepath.Dir(page), file)
				if _, err := os.Stat(path); err != nil {
					t.Errorf("%s: link %s: %v", page, target, err)
					continue
				}
			}
			if anchor != "" && !hasAnchor(t, path, anchor) {
				t.Errorf("%s: link %s: %s has no heading #%s", page, target, path, anchor)
			}
		}
	}
}

// hasAnchor says whether the Markdown file has a heading whose GitHub
// anchor is anchor.
func hasAnchor(t *testing.T, path, anchor string) bool {
	body := fence.ReplaceAllString(read(t, path), "")
	for _, m := range heading.FindAllStringSubmatch(body, -1) {
		if slug(m[1]) == anchor {
			return true
		}
	}
	return false
}

// slug is GitHub's anchor for a heading: lower case, spaces to hyphens,
// punctuation other than hyphens and underscores dropped.
func slug(h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(h)) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
