package cloudevent

import (
	"bytes"
	"mime"
	"strings"
	"time"

	"github.com/shardline/shardline/internal/echo"
)

// checkAttrs checks the required attributes (present, non-empty strings,
// within MaxAttrBytes), specversion, and that data and data_base64 are not
// both sent.
func checkAttrs(ms []member, a attrs) error {
	for _, r := range []struct {
		name string
		i    int
	}{{"id", a.id}, {"source", a.source}, {"type", a.typ}} {
		if err := checkRequired(ms, r.name, r.i); err != nil {
			return err
		}
	}
	if a.specversion >= 0 && ms[a.specversion].val != nil && string(unquote(ms[a.specversion].val)) != "1.0" {
		return fieldErr("specversion", "is %s; only \"1.0\" is supported", echo.Quote(string(unquote(ms[a.specversion].val))))
	}
	if a.data >= 0 && a.dataB64 >= 0 && ms[a.dataB64].val != nil {
		return fieldErr("data_base64", "cannot be sent together with data")
	}
	return checkOptional(ms, a)
}

// checkOptional checks the optional attributes that have a form: each,
// when present, is a non-empty string (core spec 1.0.2, "Context
// Attributes"); subject is at most MaxAttrBytes, as the query's subject
// filter is, so that every stored subject can be asked for; and
// datacontenttype is a media type (RFC 2046).
func checkOptional(ms []member, a attrs) error {
	for _, o := range []struct {
		name string
		i    int
	}{{"subject", a.subject}, {"datacontenttype", a.contentType}, {"dataschema", a.schema}} {
		if o.i < 0 || ms[o.i].val == nil {
			continue
		}
		v := unquote(ms[o.i].val)
		switch {
		case len(v) == 0:
			return fieldErr(o.name, "is empty; leave it out, or give it a value")
		case o.name == "subject" && len(v) > MaxAttrBytes:
			return fieldErr(o.name, "is %d bytes; the limit is %d", len(v), MaxAttrBytes)
		case o.name == "datacontenttype" && !isMediaType(string(v)):
			return fieldErr(o.name, "is %s, which is not a media type (RFC 2046: type/subtype with optional parameters, "+
				"such as application/json or text/plain; charset=utf-8)", echo.Quote(string(v)))
		}
	}
	return nil
}

// isMediaType tells a media type with optional parameters, as
// Content-Type holds one. mime.ParseMediaType alone also takes a
// Content-Disposition such as "xyz", without a subtype.
func isMediaType(v string) bool {
	mt, _, err := mime.ParseMediaType(v)
	return err == nil && strings.Contains(mt, "/")
}

// checkRequired checks the required attribute name, at i among ms.
func checkRequired(ms []member, name string, i int) error {
	switch {
	case i < 0 || ms[i].val == nil || len(ms[i].val) == 2:
		return fieldErr(name, "is required and must be a non-empty string")
	case len(unquote(ms[i].val)) > MaxAttrBytes:
		return fieldErr(name, "is %d bytes; the limit is %d", len(unquote(ms[i].val)), MaxAttrBytes)
	}
	if name == "id" || name == "source" {
		if r, ok := loneSurrogate(ms[i].val); ok {
			return fieldErr(name, "holds a lone UTF-16 surrogate escape \\u%04x, which is no character and would be "+
				"read as U+FFFD like every other; send the text as UTF-8 or as a \\uD8xx\\uDCxx pair", r)
		}
	}
	return nil
}

// loneSurrogate finds a \u escape of half a surrogate pair that is not
// part of a pair in the JSON string s (with its quotes). Every such escape
// decodes to U+FFFD, so values that differ only in them would share a key.
// (Raw UTF-8 cannot hold a surrogate: utf8.Valid refuses one.)
func loneSurrogate(s []byte) (rune, bool) {
	for p := bytes.IndexByte(s, '\\'); p >= 0 && p+1 < len(s); {
		if s[p+1] != 'u' {
			p = nextEscape(s, p+2)
			continue
		}
		r := hex4(s, p+2)
		switch {
		case r >= 0xdc00 && r <= 0xdfff:
			return r, true
		case r >= 0xd800 && r <= 0xdbff:
			if lo := hex4After(s, p+6); lo < 0xdc00 || lo > 0xdfff {
				return r, true
			}
			p = nextEscape(s, p+12)
		default:
			p = nextEscape(s, p+6)
		}
	}
	return 0, false
}

// nextEscape is the index of the next backslash at or after p, or -1.
func nextEscape(s []byte, p int) int {
	if p >= len(s) {
		return -1
	}
	if i := bytes.IndexByte(s[p:], '\\'); i >= 0 {
		return p + i
	}
	return -1
}

// hex4After is the code of a \uXXXX escape at p, or -1 if there is none.
func hex4After(s []byte, p int) rune {
	if p+1 < len(s) && s[p] == '\\' && s[p+1] == 'u' {
		return hex4(s, p+2)
	}
	return -1
}

// hex4 reads the four hex digits at p (s is valid JSON, so they are there).
func hex4(s []byte, p int) rune {
	var r rune
	for _, c := range s[p : p+4] {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c - 'a' + 10)
		default:
			r |= rune(c - 'A' + 10)
		}
	}
	return r
}

// eventTime is the event's time in UTC, or stamp (and stamped) when it has
// none. It must lie within the retention window and at most MaxFuture
// ahead of now.
func eventTime(ms []member, a attrs, now, stamp time.Time, lim Limits) (t time.Time, stamped bool, err error) {
	if a.time >= 0 && ms[a.time].val != nil {
		s := unquote(ms[a.time].val)
		p, err := time.Parse(time.RFC3339Nano, string(s))
		if err != nil {
			return t, false, fieldErr("time", "%s is not an RFC 3339 timestamp such as 2006-01-02T15:04:05Z", echo.Quote(string(s)))
		}
		t = p.UTC()
	} else {
		t, stamped = stamp.UTC(), true
	}
	if t.After(now.Add(MaxFuture)) {
		return t, stamped, fieldErr("time", "%s is more than %v in the future", t.Format(time.RFC3339Nano), MaxFuture)
	}
	if lim.Retention > 0 && !t.After(now.Add(-lim.Retention)) {
		return t, stamped, fieldErr("time", "%s is older than the retention window of %v", t.Format(time.RFC3339Nano), lim.Retention)
	}
	return t, stamped, nil
}
