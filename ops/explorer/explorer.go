// Package explorer serves the explorer, a web page over the query API: its
// HTML, JavaScript, CSS and the pinned uPlot are embedded in the binary, so
// the page works offline and needs no front-end build. `make run` serves it
// beside the API; `shardline explore` serves it in front of a deployed API
// through Proxy.
package explorer

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"net/http"
	"path"
	"strings"
	"time"
)

//go:embed assets
var embedded embed.FS

// Prefix is where the page's assets are served; the page itself is at "/".
const Prefix = "/assets/"

// csp allows the page nothing but its own origin: no CDN, no inline script,
// no frames. uPlot styles its elements through the DOM, which style-src
// does not govern.
const csp = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
	"base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// Assets are the page's files: index.html, app.js, style.css and vendor/
// (uPlot's dist files and license), as served.
func Assets() fs.FS {
	sub, err := fs.Sub(embedded, "assets")
	if err != nil {
		panic(fmt.Sprintf("explorer: embedded assets: %v", err)) // the embed pattern guarantees the directory
	}
	return sub
}

// file is an embedded asset ready to serve.
type file struct {
	body        []byte
	contentType string
	etag        string
}

// Handler serves the page at "/" and its assets under Prefix, to GET and
// HEAD. Any other path is a 404, any other method a 405.
func Handler() http.Handler {
	files, err := load(Assets())
	if err != nil {
		panic(fmt.Sprintf("explorer: %v", err))
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name, ok := assetName(r.URL.Path)
		f, found := files[name]
		if !ok || !found {
			http.NotFound(w, r)
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "the explorer's files are read with GET", http.StatusMethodNotAllowed)
			return
		}
		h := w.Header()
		h.Set("Content-Type", f.contentType)
		h.Set("ETag", f.etag)
		h.Set("Cache-Control", "no-cache") // revalidate: the ETag changes with the binary's assets
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		if name == "index.html" {
			h.Set("Content-Security-Policy", csp)
		}
		http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(f.body))
	})
}

// With serves the page at "/" and its assets under Prefix, and passes
// every other request to api, so that the API's routes and its own 404s are
// unchanged.
func With(api http.Handler) http.Handler {
	page := Handler()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/" || strings.HasPrefix(r.URL.Path, Prefix) {
			page.ServeHTTP(w, r)
			return
		}
		api.ServeHTTP(w, r)
	})
}

// assetName maps a request path to an embedded file's name.
func assetName(p string) (string, bool) {
	if p == "/" {
		return "index.html", true
	}
	name, ok := strings.CutPrefix(p, Prefix)
	if !ok || name == "" || name != path.Clean(name) || !fs.ValidPath(name) {
		return "", false
	}
	return name, true
}

// mediaTypes are the assets' media types, fixed here rather than taken
// from the machine's mime.types.
var mediaTypes = map[string]string{
	".html": "text/html; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
	".css":  "text/css; charset=utf-8",
}

// load reads every file of assets with its media type and a strong ETag.
func load(assets fs.FS) (map[string]file, error) {
	files := map[string]file{}
	err := fs.WalkDir(assets, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		body, err := fs.ReadFile(assets, name)
		if err != nil {
			return fmt.Errorf("read asset %s: %w", name, err)
		}
		ct, ok := mediaTypes[path.Ext(name)]
		if !ok {
			ct = "text/plain; charset=utf-8" // the license
		}
		sum := sha256.Sum256(body)
		files[name] = file{body: body, contentType: ct, etag: `"` + hex.EncodeToString(sum[:12]) + `"`}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("embedded assets: %w", err)
	}
	return files, nil
}
