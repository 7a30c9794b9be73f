package query

import (
	"errors"
	"net/url"
	"testing"
	"time"
)

func TestParseParamsDefaults(t *testing.T) {
	p, err := ParseParams(Events, "source=a%23b", now, NewKeys("", "t"))
	if err != nil {
		t.Fatal(err)
	}
	if p.Source != "a#b" || p.Limit != DefaultLimit || p.Order != Desc || !p.To.Equal(now) || !p.From.Equal(now.Add(-time.Hour)) || p.Consistent {
		t.Fatalf("defaults: %+v", p)
	}
	p, err = ParseParams(Events, "source=s&from=2026-11-22T10:00:00+01:00", now, NewKeys("", "t"))
	if err != nil || !p.From.Equal(time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)) || !p.To.Equal(now) {
		t.Fatalf("an unencoded + offset: %+v %v", p, err)
	}
	if _, err := ParseParams(Quarantine, "source=s", now, NewKeys("", "t")); err == nil {
		t.Fatal("the quarantine took a source")
	}
	// Grafana's ${__from} and ${__to}: epoch milliseconds, on both routes
	for _, kind := range []Kind{Events, Quarantine} {
		q := "from=1795345200000&to=1795348800500"
		if kind == Events {
			q += "&source=s"
		}
		p, err = ParseParams(kind, q, now, NewKeys("", "t"))
		if err != nil || !p.From.Equal(now.Add(-time.Hour)) || !p.To.Equal(now.Add(500*time.Millisecond)) {
			t.Fatalf("epoch milliseconds: %+v %v", p, err)
		}
	}
}

func TestCursorRoundTrip(t *testing.T) {
	k := NewKeys("secret", "t")
	p := Params{Source: "s", Order: Asc, From: now.Add(-time.Hour), To: now, Type: "x"}
	c := next(Events, &p, now.Add(-time.Minute), "id#with/odd ü")
	got, err := k.Decode(k.Encode(c))
	if err != nil || got.ID != c.ID || !got.Time.Equal(c.Time) || got.digest != c.digest || got.order != Asc {
		t.Fatalf("round trip: %+v %v", got, err)
	}
	if _, err := NewKeys("other", "t").Decode(k.Encode(c)); err == nil {
		t.Fatal("a cursor signed with another key was accepted")
	}
}

// FuzzParams: no query string panics the parser, and every error is a
// ParamError naming a parameter (so the API answers 400, never 500).
func FuzzParams(f *testing.F) {
	k := NewKeys("", "t")
	p := Params{Source: "s", Order: Desc, From: now.Add(-time.Hour), To: now}
	good := k.Encode(next(Events, &p, now.Add(-time.Minute), "x"))
	wide := Params{Source: "s", Order: Desc, From: time.Unix(0, 0).UTC(), To: now}
	huge := k.Encode(next(Events, &wide, now.Add(-time.Minute), "x"))
	for _, s := range []string{
		"source=s", "source=s&limit=5&order=asc", "source=s&cursor=" + good, "source=s&cursor=AAAA", "source=s&cursor=" + huge,
		"source=%ff", "source=s&from=2026-11-22T10:00:00Z&to=2026-11-22T09:00:00Z", "source=s&limit=-1",
		"source=s&source=t", "%zz", "source=s&type=&subject=", "source=s&consistent=TRUE&bogus",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		for _, kind := range []Kind{Events, Quarantine} {
			p, err := ParseParams(kind, raw, now, k)
			if err != nil {
				var pe *ParamError
				if !errors.As(err, &pe) || pe.Param == "" {
					t.Fatalf("ParseParams(%q) error %v is not a named ParamError", raw, err)
				}
				continue
			}
			if !p.From.Before(p.To) || p.To.Sub(p.From) > MaxRange || p.Limit < 1 || p.Limit > MaxLimit {
				t.Fatalf("ParseParams(%q) accepted %+v", raw, p)
			}
			if kind == Events && p.Source == "" {
				t.Fatalf("ParseParams(%q) accepted an empty source", raw)
			}
			if c := p.Cursor; c != nil && (c.Time.Before(p.From) || !c.Time.Before(p.To)) {
				t.Fatalf("cursor outside the range accepted: %q", raw)
			}
		}
		_, _ = url.ParseQuery(raw)
	})
}
