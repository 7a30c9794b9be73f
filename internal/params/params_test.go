package params

import (
	"errors"
	"strings"
	"testing"
	"time"
)

var now = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

func TestParseRefusesWhatNoRouteTakes(t *testing.T) {
	for raw, param := range map[string]string{
		"from=1&from=2": "from",
		"bogus=1":       "bogus",
		"=x":            "query",
		"to=%ff":        "to",
		"to=%zz":        "query",
	} {
		_, err := Parse(raw, "from", "to")
		var pe *Error
		if !errors.As(err, &pe) || pe.Param != param {
			t.Errorf("%q: got %v, want an error naming %q", raw, err, param)
		}
	}
}

func TestTimeTakesRFC3339AndEpochMillis(t *testing.T) {
	for s, want := range map[string]time.Time{
		"1795348800000":             time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC),
		"1795348800001":             time.Date(2026, 11, 22, 12, 0, 0, 1e6, time.UTC),
		"0":                         time.Unix(0, 0).UTC(),
		"2026-11-22T13:00:00+01:00": time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC),
		"2026-11-22T13:00:00 01:00": time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC),
		"2026-11-22T12:00:00.5Z":    time.Date(2026, 11, 22, 12, 0, 0, 5e8, time.UTC),
	} {
		got, err := ParseTime("from", s)
		if err != nil || !got.Equal(want) {
			t.Errorf("%q: got %v %v, want %v", s, got, err, want)
		}
	}
	for _, s := range []string{"", "-1", "1e3", "99999999999999999999", "9223372036854775807", "yesterday", "2026-11-22"} {
		if _, err := ParseTime("from", s); err == nil || !strings.HasPrefix(err.Error(), "from: ") {
			t.Errorf("%q: got %v, want an error naming from", s, err)
		}
	}
}

func TestRange(t *testing.T) {
	v, _ := Parse("")
	r, err := v.Range(now, time.Hour, 31*24*time.Hour)
	if err != nil || !r.From.Equal(now.Add(-time.Hour)) || !r.To.Equal(now) || r.Explicit {
		t.Errorf("default: %+v %v", r, err)
	}
	v, _ = Parse("to=1795348800000", "to")
	if r, _ = v.Range(now.Add(time.Hour), 24*time.Hour, 31*24*time.Hour); !r.From.Equal(now.Add(-24*time.Hour)) || !r.Explicit {
		t.Errorf("to only: %+v", r)
	}
	for raw, param := range map[string]string{
		"from=2026-11-22T12:00:00Z&to=2026-11-22T12:00:00Z": "from",
		"from=2026-10-01T00:00:00Z&to=2026-11-22T00:00:00Z": "to",
	} {
		v, _ := Parse(raw, "from", "to")
		_, err := v.Range(now, time.Hour, 31*24*time.Hour)
		var pe *Error
		if !errors.As(err, &pe) || pe.Param != param {
			t.Errorf("%q: got %v, want an error naming %q", raw, err, param)
		}
	}
}

func TestInt(t *testing.T) {
	v, _ := Parse("limit=0", "limit")
	if _, err := v.Int("limit", 1, 1000, 100); err == nil {
		t.Error("limit=0 accepted")
	}
	v, _ = Parse("")
	if n, err := v.Int("limit", 1, 1000, 100); n != 100 || err != nil {
		t.Errorf("default: %d %v", n, err)
	}
}

func TestRequiredFilterBoolChoice(t *testing.T) {
	v, _ := Parse("source=s&type=&consistent=TRUE&order=up", "source", "type", "subject", "consistent", "order")
	if s, err := v.Required("source", 1); s != "s" || err != nil {
		t.Errorf("required: %q %v", s, err)
	}
	for name, want := range map[string]string{
		"subject": "subject: is required",
		"source":  "source: is 1 bytes; at most 0",
	} {
		max := 0
		if _, err := v.Required(name, max); err == nil || err.Error() != want {
			t.Errorf("required %s: got %v, want %q", name, err, want)
		}
	}
	if _, err := v.Filter("type", 256); err == nil || err.Error() != "type: is empty; leave it out to match every type" {
		t.Errorf("empty filter: %v", err)
	}
	if s, err := v.Filter("subject", 256); s != "" || err != nil {
		t.Errorf("absent filter: %q %v", s, err)
	}
	long, _ := Parse("subject="+strings.Repeat("s", 257), "subject")
	if _, err := long.Filter("subject", 256); err == nil || err.Error() != "subject: is 257 bytes; at most 256" {
		t.Errorf("long filter: %v", err)
	}
	if b, err := v.Bool("consistent", false); !b || err != nil {
		t.Errorf("bool: %v %v", b, err)
	}
	if _, err := v.Choice("order", "desc", "asc", "desc"); err == nil || err.Error() != `order: is "up"; want asc or desc` {
		t.Errorf("choice: %v", err)
	}
	if s, err := v.Choice("absent", "desc", "asc", "desc"); s != "desc" || err != nil {
		t.Errorf("choice default: %q %v", s, err)
	}
	if got := orList([]string{"1m", "5m", "15m"}); got != "1m, 5m or 15m" {
		t.Errorf("orList: %q", got)
	}
}
