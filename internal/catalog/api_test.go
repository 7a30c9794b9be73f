package catalog

import (
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/shardline/shardline/internal/params"
)

var (
	testKey = []byte("test key")
	at      = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
)

func TestParseRequestNamesTheBadParameter(t *testing.T) {
	for raw, param := range map[string]string{
		"limit=0":     "limit",
		"limit=1001":  "limit",
		"limit=x":     "limit",
		"source=a":    "source",
		"from=x":      "from",
		"from=1&to=1": "from",
		"from=2026-10-01T00:00:00Z&to=2026-11-22T00:00:00Z": "to",
		"cursor=abc":                        "cursor",
		"limit=1&limit=2":                   "limit",
		"cursor=" + strings.Repeat("A", 60): "cursor",
	} {
		_, err := ParseRequest(raw, at, testKey)
		var pe *params.Error
		if !errors.As(err, &pe) || pe.Param != param {
			t.Errorf("%q: got %v, want an error naming %q", raw, err, param)
		}
	}
}

func TestParseRequestDefaultsAndEpochMillis(t *testing.T) {
	r, err := ParseRequest("", at, testKey)
	if err != nil || !r.From.Equal(at.Add(-24*time.Hour)) || !r.To.Equal(at) || r.Limit != 1000 {
		t.Errorf("defaults: %+v %v", r, err)
	}
	r, err = ParseRequest("from=1795262400000&to=1795348800000&limit=5", at, testKey)
	if err != nil || !r.From.Equal(at.Add(-24*time.Hour)) || !r.To.Equal(at) || r.Limit != 5 {
		t.Errorf("epoch ms: %+v %v", r, err)
	}
	if got := Days(r.From, r.To); len(got) != 2 || got[0] != "2026-11-21" || got[1] != "2026-11-22" {
		t.Errorf("days %v", got)
	}
}

func TestCursors(t *testing.T) {
	from, to := at.Add(-48*time.Hour), at
	c := encodeCursor(cursor{from: from, to: to, after: "a#b ü"}, testKey)
	r, err := ParseRequest("cursor="+url.QueryEscape(c), at.Add(time.Hour), testKey)
	if err != nil || r.After != "a#b ü" || !r.From.Equal(from) || !r.To.Equal(to) {
		t.Fatalf("round trip: %+v %v", r, err)
	}
	// the same range given again is fine; another is not
	q := url.Values{"cursor": {c}, "from": {from.Format(time.RFC3339)}, "to": {to.Format(time.RFC3339)}}
	if _, err := ParseRequest(q.Encode(), at, testKey); err != nil {
		t.Errorf("same range: %v", err)
	}
	q.Set("from", from.Add(time.Hour).Format(time.RFC3339))
	if _, err := ParseRequest(q.Encode(), at, testKey); err == nil || !strings.HasPrefix(err.Error(), "cursor:") {
		t.Errorf("other range: %v", err)
	}
	// another key, or one flipped byte, is refused
	if _, err := ParseRequest("cursor="+c, at, []byte("other")); err == nil || !strings.HasPrefix(err.Error(), "cursor:") {
		t.Errorf("other key: %v", err)
	}
	b := []byte(c)
	b[3] ^= 1
	if _, err := ParseRequest("cursor="+string(b), at, testKey); err == nil || !strings.HasPrefix(err.Error(), "cursor:") {
		t.Errorf("flipped byte: %v", err)
	}
	// a validly signed cursor cannot carry a range the API would refuse
	huge := encodeCursor(cursor{from: time.Unix(0, 0), to: at, after: "x"}, testKey)
	if _, err := ParseRequest("cursor="+huge, at, testKey); err == nil || !strings.HasPrefix(err.Error(), "to:") {
		t.Errorf("huge range: %v", err)
	}
}
