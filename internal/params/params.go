// Package params reads the query strings of shardline's read API: the
// checks every route shares (unknown, repeated, empty-named and non-UTF-8
// parameters), times given as RFC 3339 or as epoch milliseconds, and time
// ranges. Every error is an *Error that names the parameter, for a 400,
// and quotes at most echo.MaxQuoted bytes of what was sent.
package params

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/shardline/shardline/internal/echo"
)

// Error is a bad parameter, named.
type Error struct {
	Param   string
	Problem string
}

// Error reads "parameter: problem".
func (e *Error) Error() string { return e.Param + ": " + e.Problem }

// Errorf builds an *Error for param.
func Errorf(param, format string, args ...any) error {
	return &Error{Param: param, Problem: fmt.Sprintf(format, args...)}
}

// Values is a checked query string: each parameter is known to the route,
// given once, and valid UTF-8.
type Values map[string]string

// Parse reads rawQuery, allowing only the parameters in allowed.
func Parse(rawQuery string, allowed ...string) (Values, error) {
	vals, err := url.ParseQuery(rawQuery)
	if err != nil {
		return nil, Errorf("query", "cannot be parsed: %v", err)
	}
	ok := map[string]bool{}
	for _, a := range allowed {
		ok[a] = true
	}
	out := Values{}
	for name, vs := range vals {
		switch {
		case name == "":
			return nil, Errorf("query", "has a value with no parameter name")
		case !ok[name]:
			return nil, Errorf(echo.Cut(name, echo.MaxQuoted), "is not a parameter here; this route takes %s", strings.Join(allowed, ", "))
		case len(vs) > 1:
			return nil, Errorf(name, "is given %d times; give it once", len(vs))
		case !utf8.ValidString(vs[0]):
			return nil, Errorf(name, "is not valid UTF-8")
		}
		out[name] = vs[0]
	}
	return out, nil
}

// Get is the value of name and whether it was given.
func (v Values) Get(name string) (string, bool) {
	s, ok := v[name]
	return s, ok
}

// Int reads name as a whole number from lo to hi, or def when absent.
func (v Values) Int(name string, lo, hi, def int) (int, error) {
	s, ok := v[name]
	if !ok {
		return def, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < lo || n > hi {
		return 0, Errorf(name, "is %s; want a whole number from %d to %d", echo.Quote(s), lo, hi)
	}
	return n, nil
}

// Required reads name, which must be given, non-empty and at most
// maxBytes long.
func (v Values) Required(name string, maxBytes int) (string, error) {
	s, ok := v[name]
	switch {
	case !ok || s == "":
		return "", Errorf(name, "is required")
	case len(s) > maxBytes:
		return "", Errorf(name, "is %d bytes; at most %d", len(s), maxBytes)
	}
	return s, nil
}

// Filter reads name as an optional exact-match filter: "" when absent, and
// an error when given empty, which would match nothing, or longer than
// maxBytes, which no stored value is.
func (v Values) Filter(name string, maxBytes int) (string, error) {
	s, ok := v[name]
	switch {
	case ok && s == "":
		return "", Errorf(name, "is empty; leave it out to match every %s", name)
	case len(s) > maxBytes:
		return "", Errorf(name, "is %d bytes; at most %d", len(s), maxBytes)
	}
	return s, nil
}

// Bool reads name as true or false (as strconv.ParseBool spells them), or
// def when absent.
func (v Values) Bool(name string, def bool) (bool, error) {
	s, ok := v[name]
	if !ok {
		return def, nil
	}
	b, err := strconv.ParseBool(s)
	if err != nil {
		return false, Errorf(name, "is %s; want true or false", echo.Quote(s))
	}
	return b, nil
}

// Choice reads name as one of choices, or def when absent.
func (v Values) Choice(name, def string, choices ...string) (string, error) {
	s, ok := v[name]
	if !ok {
		return def, nil
	}
	for _, c := range choices {
		if s == c {
			return s, nil
		}
	}
	return "", Errorf(name, "is %s; want %s", echo.Quote(s), orList(choices))
}

// orList is "a", "a or b", "a, b or c".
func orList(words []string) string {
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " or " + words[len(words)-1]
}

// Time reads name as a time: RFC 3339, or integer epoch milliseconds (what
// Grafana's ${__from} gives). ok is false when it is absent.
func (v Values) Time(name string) (t time.Time, ok bool, err error) {
	s, ok := v[name]
	if !ok {
		return time.Time{}, false, nil
	}
	t, err = ParseTime(name, s)
	return t, true, err
}

// ParseTime reads s, the value of parameter name, as RFC 3339 or epoch
// milliseconds, in UTC.
func ParseTime(name, s string) (time.Time, error) {
	if s != "" && strings.Trim(s, "0123456789") == "" {
		ms, err := strconv.ParseInt(s, 10, 64)
		if err != nil || ms > maxMillis {
			return time.Time{}, Errorf(name, "%s is out of range for epoch milliseconds", echo.Cut(s, echo.MaxQuoted))
		}
		return time.UnixMilli(ms).UTC(), nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil && strings.Contains(s, " ") {
		// An unencoded "+01:00" arrives as " 01:00": take it as meant.
		t, err = time.Parse(time.RFC3339Nano, strings.ReplaceAll(s, " ", "+"))
	}
	if err != nil {
		return t, Errorf(name, "%s is neither an RFC 3339 time such as 2026-11-22T10:00:00Z nor epoch milliseconds such as 1795348800000", echo.Quote(s))
	}
	if t.Year() < 1970 || t.Year() > maxYear {
		return t, Errorf(name, "%s is out of range", echo.Cut(s, echo.MaxQuoted))
	}
	return t.UTC(), nil
}

// maxYear is the last year a time may fall in: cursors carry times as Unix
// nanoseconds, which end in 2262.
const maxYear = 2261

// maxMillis is the last millisecond of maxYear.
var maxMillis = time.Date(maxYear, 12, 31, 23, 59, 59, 999e6, time.UTC).UnixMilli()

// Range is a [From, To) time range; Explicit says whether the request gave
// either end.
type Range struct {
	From, To time.Time
	Explicit bool
}

// Range reads from and to: to defaults to now, from to def before to. The
// range must be non-empty and at most max long.
func (v Values) Range(now time.Time, def, max time.Duration) (Range, error) {
	from, hasFrom, err := v.Time("from")
	if err != nil {
		return Range{}, err
	}
	to, hasTo, err := v.Time("to")
	if err != nil {
		return Range{}, err
	}
	if !hasTo {
		to = now.UTC()
	}
	if !hasFrom {
		from = to.Add(-def)
	}
	r := Range{From: from, To: to, Explicit: hasFrom || hasTo}
	return r, r.Check(max)
}

// Check refuses an empty range and one longer than max, however the range
// arrived (parameters or a cursor).
func (r Range) Check(max time.Duration) error {
	if !r.From.Before(r.To) {
		return Errorf("from", "%s is not before to %s", r.From.Format(time.RFC3339Nano), r.To.Format(time.RFC3339Nano))
	}
	if r.To.Sub(r.From) > max {
		return Errorf("to", "the range from %s to %s is longer than %s; ask for shorter ranges",
			r.From.Format(time.RFC3339Nano), r.To.Format(time.RFC3339Nano), Days(max))
	}
	return nil
}

// Days writes d as whole days when it is, as the range errors do: "31 days".
func Days(d time.Duration) string {
	if d%(24*time.Hour) == 0 {
		return fmt.Sprintf("%d days", d/(24*time.Hour))
	}
	return d.String()
}
