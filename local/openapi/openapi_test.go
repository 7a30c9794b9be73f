package openapi

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestHandlerServesTheDocument(t *testing.T) {
	srv := httptest.NewServer(Handler())
	defer srv.Close()

	resp, err := http.Get(srv.URL + Path)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != MediaType || !bytes.Equal(body, Document()) {
		t.Fatalf("GET: %d %q, %d bytes", resp.StatusCode, resp.Header.Get("Content-Type"), len(body))
	}
	if !bytes.HasPrefix(body, []byte("openapi: 3.1.0\n")) {
		t.Fatalf("the document does not begin with its version: %.40q", body)
	}

	resp, err = http.Head(srv.URL + Path)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.ContentLength != int64(len(Document())) {
		t.Fatalf("HEAD: %d, length %d", resp.StatusCode, resp.ContentLength)
	}

	resp, err = http.Post(srv.URL+Path, "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 405 || resp.Header.Get("Allow") == "" {
		t.Fatalf("POST: %d, Allow %q", resp.StatusCode, resp.Header.Get("Allow"))
	}
}

func TestDocumentIsACopy(t *testing.T) {
	d := Document()
	d[0] = 'X'
	if Document()[0] != 'o' {
		t.Fatal("changing what Document returned changed the document")
	}
}
