package ingest

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestHTTPRefusesIdentitiesTheKeyCannotTellApart: ids "\ud800" and "\udbff"
// both decode to U+FFFD, and so to one item; an "ID" beside the "id" is a
// second identity a case-insensitive reader would see. Each such event is
// refused, naming the field, and quarantined, never stored over another.
func TestHTTPRefusesIdentitiesTheKeyCannotTellApart(t *testing.T) {
	e := newEnv(t, false, nil)
	at := fixtureNow.Add(-time.Minute).Format("2006-01-02T15:04:05Z")
	body := `[{"id":"\ud800","source":"web","type":"t","time":"` + at + `"},` +
		`{"id":"\udbff","source":"web","type":"t","time":"` + at + `"},` +
		`{"id":"a","source":"\udc00","type":"t","time":"` + at + `"},` +
		`{"id":"b","ID":"c","source":"web","type":"t","time":"` + at + `"}]`
	resp, err := e.h.HTTP(context.Background(), post(body, "application/cloudevents-batch+json"))
	if err != nil {
		t.Fatal(err)
	}
	r := decodeResponse(t, resp.Body)
	if resp.StatusCode != 400 || r.Accepted != 0 || len(r.Rejected) != 4 {
		t.Fatalf("%d %s; want 400 with 4 rejections", resp.StatusCode, resp.Body)
	}
	for i, want := range []string{"id: ", "id: ", "source: ", "ID: "} {
		if rj := r.Rejected[i]; rj.Index != i || !strings.HasPrefix(rj.Error, want) {
			t.Errorf("rejection %d = %+v; want index %d, an error beginning %q", i, rj, i, want)
		}
	}
	if n := len(e.itemsIn(t, "E#")); n != 0 {
		t.Errorf("%d events stored, want none", n)
	}
	if n := len(e.itemsIn(t, "Q#")); n != 4 {
		t.Errorf("%d records quarantined, want 4", n)
	}
}
