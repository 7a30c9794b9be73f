package explorer

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Budget is what the page's own files may weigh, gzipped: the issue's
// 200 KB.
const Budget = 200 << 10

// TestAssetsFitTheBudget: index.html, app.js, style.css and uPlot, each
// gzipped as a server would send it, total at most 200 KB.
func TestAssetsFitTheBudget(t *testing.T) {
	total, raw := 0, 0
	err := fs.WalkDir(Assets(), ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasSuffix(name, ".LICENSE") {
			return err
		}
		b, err := fs.ReadFile(Assets(), name)
		if err != nil {
			return err
		}
		var z bytes.Buffer
		w, _ := gzip.NewWriterLevel(&z, gzip.BestCompression)
		w.Write(b)
		w.Close()
		t.Logf("%-28s %7d bytes, %6d gzipped", name, len(b), z.Len())
		total += z.Len()
		raw += len(b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("total: %d bytes, %d gzipped (budget %d)", raw, total, Budget)
	if total > Budget {
		t.Fatalf("the page's assets weigh %d bytes gzipped; the budget is %d", total, Budget)
	}
}

// TestVendoredUPlotIsThePinnedPackage: the uPlot files the page embeds are
// byte for byte those of the version tools/package.json pins, as npm
// installed it (make deps).
func TestVendoredUPlotIsThePinnedPackage(t *testing.T) {
	var pkg struct {
		DevDependencies map[string]string `json:"devDependencies"`
		Version         string            `json:"version"`
	}
	read := func(path string) {
		t.Helper()
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run make deps: npm installs the pinned uplot into tools/node_modules)", err)
		}
		if err := json.Unmarshal(b, &pkg); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
	}
	read("../../tools/package.json")
	pinned := pkg.DevDependencies["uplot"]
	if !regexp.MustCompile(`^\d+\.\d+\.\d+$`).MatchString(pinned) {
		t.Fatalf("tools/package.json pins uplot %q; want an exact version", pinned)
	}
	read("../../tools/node_modules/uplot/package.json")
	if pkg.Version != pinned {
		t.Fatalf("tools/node_modules has uplot %s, package.json pins %s: run make deps", pkg.Version, pinned)
	}
	for vendored, dist := range map[string]string{
		"vendor/uPlot.iife.min.js": "dist/uPlot.iife.min.js",
		"vendor/uPlot.min.css":     "dist/uPlot.min.css",
		"vendor/uPlot.LICENSE":     "LICENSE",
	} {
		want, err := os.ReadFile(filepath.Join("../../tools/node_modules/uplot", dist))
		if err != nil {
			t.Fatal(err)
		}
		got, err := fs.ReadFile(Assets(), vendored)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from uplot %s's %s: copy it again", vendored, pinned, dist)
		}
	}
}

// TestPageLoadsOnlyItsOwnFiles: every script and stylesheet index.html
// names is embedded, and nothing of the page's own points elsewhere (no
// CDN: it works offline).
func TestPageLoadsOnlyItsOwnFiles(t *testing.T) {
	html, err := fs.ReadFile(Assets(), "index.html")
	if err != nil {
		t.Fatal(err)
	}
	refs := regexp.MustCompile(`(?:src|href)="([^"#]+)"`).FindAllSubmatch(html, -1)
	if len(refs) < 4 {
		t.Fatalf("index.html names %d files", len(refs))
	}
	for _, m := range refs {
		ref := string(m[1])
		if ref == "data:," {
			continue
		}
		name, ok := strings.CutPrefix(ref, "assets/")
		if !ok {
			t.Errorf("index.html loads %q, not one of its own assets", ref)
			continue
		}
		if _, err := fs.Stat(Assets(), name); err != nil {
			t.Errorf("index.html loads %q: %v", ref, err)
		}
	}
	for _, name := range []string{"index.html", "app.js", "style.css"} {
		b, _ := fs.ReadFile(Assets(), name)
		if m := regexp.MustCompile(`(?i)(https?:)?//[a-z0-9.-]+\.[a-z]{2,}/`).Find(b); m != nil {
			t.Errorf("%s refers to %s", name, m)
		}
	}
}

// TestHandler: the page at /, its assets under /assets/, nothing else; a
// revalidation answers 304; With passes every other path to the API.
func TestHandler(t *testing.T) {
	api := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusTeapot)
		io.WriteString(w, "api "+r.URL.Path)
	})
	srv := httptest.NewServer(With(api))
	defer srv.Close()
	get := func(method, path string, h ...string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(method, srv.URL+path, nil)
		for i := 0; i+1 < len(h); i += 2 {
			req.Header.Set(h[i], h[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	for _, c := range []struct {
		method, path string
		status       int
		ctype        string
	}{
		{"GET", "/", 200, "text/html; charset=utf-8"},
		{"HEAD", "/", 200, "text/html; charset=utf-8"},
		{"GET", "/assets/app.js", 200, "text/javascript; charset=utf-8"},
		{"GET", "/assets/style.css", 200, "text/css; charset=utf-8"},
		{"GET", "/assets/vendor/uPlot.iife.min.js", 200, "text/javascript; charset=utf-8"},
		{"GET", "/assets/vendor/uPlot.LICENSE", 200, "text/plain; charset=utf-8"},
		{"GET", "/assets/", 404, ""},
		{"GET", "/assets/vendor", 404, ""},
		{"GET", "/assets/nope.js", 404, ""},
		{"GET", "/assets/../index.html", 404, ""},
		{"POST", "/", 405, ""},
		{"GET", "/v1/events", 418, ""},
		{"GET", "/index.html", 418, ""},
	} {
		resp := get(c.method, c.path)
		if resp.StatusCode != c.status {
			t.Errorf("%s %s: %d, want %d", c.method, c.path, resp.StatusCode, c.status)
		}
		if c.ctype != "" && resp.Header.Get("Content-Type") != c.ctype {
			t.Errorf("%s %s: Content-Type %q", c.method, c.path, resp.Header.Get("Content-Type"))
		}
	}
	page := get("GET", "/")
	if csp := page.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || !strings.Contains(csp, "connect-src 'self'") {
		t.Errorf("the page's CSP: %q", csp)
	}
	etag := page.Header.Get("ETag")
	if resp := get("GET", "/", "If-None-Match", etag); etag == "" || resp.StatusCode != http.StatusNotModified {
		t.Errorf("revalidating with ETag %q: %d", etag, resp.StatusCode)
	}
}
