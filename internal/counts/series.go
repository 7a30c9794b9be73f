package counts

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"
)

// Bounds of an answer grouped by type.
const (
	// MaxSeries is the most series of types an answer lists; the rest,
	// the types with fewest events, are summed in the "other" series.
	// A chart of more is unreadable, and a counter item keeps at most
	// MaxTypesPerItem types anyway.
	MaxSeries = 100
	// MaxSeriesBytes bounds what the series add to the Lambda response
	// payload (6 MB, 6,291,456 bytes, counted as the payload carries them:
	// the answer's JSON as a string in API Gateway's response, every " and
	// \ escaped). The rest of the answer takes well under a kilobyte; the
	// margin is the one the events' pages keep. At one minute over a day
	// (1,440 points) a series takes about 66 KB: about 93 series fit.
	MaxSeriesBytes = 6<<20 - 64<<10
)

// tally is the sums of a read, sparse: by series key (a type, or "" for the
// one series of an answer not grouped by type), and the overflow counters'
// events when they are not in that series. Grouped by type, the read
// tallies in a ranker (rank.go), whose tally holds the types with most
// events by name and the rest summed in others; types counts them all.
type tally struct {
	byType   map[string]*sum
	overflow *sum
	others   *sum
	types    int
	rank     *ranker // grouped by type: where the read tallies types
}

// done is the tally as the series take it, once every item was added.
func (t tally) done() tally {
	if t.rank != nil {
		return t.rank.tally(t.overflow)
	}
	return t
}

// newTally is the empty tally of a read of r.
func newTally(r Request) tally {
	t := tally{byType: map[string]*sum{}, overflow: &sum{}, others: &sum{}}
	if r.GroupByType {
		t.rank = newRanker()
	}
	return t
}

func (t tally) series(key string) *sum {
	s := t.byType[key]
	if s == nil {
		s = &sum{}
		t.byType[key] = s
	}
	return s
}

// sum is the counts of one series, by bucket.
type sum struct {
	total    int64
	byBucket map[int]int64
}

func (s *sum) add(bucket int, n int64) {
	if s.byBucket == nil {
		s.byBucket = map[int]int64{}
	}
	s.byBucket[bucket] += n
	s.total += n
}

func (s *sum) merge(o *sum) {
	for b, n := range o.byBucket {
		s.add(b, n)
	}
}

// series turns the sums into the answer's series. Without group_by: one
// series, and after it the "other" series of overflow events when a type
// filter cannot tell whether they are of that type. With group_by=type:
// one series per type, bytewise by type, then the "other" series (see fit).
func (r Request) series(t tally) []Series {
	times := r.times()
	if !r.GroupByType {
		out := []Series{r.points("", t.series(""), times)}
		if t.overflow.total > 0 {
			out = append(out, r.other(t.overflow, Other{Overflow: true}, times))
		}
		return out
	}
	return r.fit(t, times)
}

// fit lists the types with most events (ties bytewise), as many as fit in
// MaxSeries series and MaxSeriesBytes, and sums every other type and the
// overflow in the "other" series, last; so that the answer always fits
// Lambda's response limit and its series always add up to every event.
// t is a ranker's tally: byType holds at most MaxSeries types.
func (r Request) fit(t tally, times []string) []Series {
	ranked := make([]string, 0, len(t.byType))
	for typ := range t.byType {
		ranked = append(ranked, typ)
	}
	sort.Slice(ranked, func(i, j int) bool {
		a, b := t.byType[ranked[i]].total, t.byType[ranked[j]].total
		return a > b || a == b && ranked[i] < ranked[j]
	})
	out := make([]Series, 0, min(len(ranked), MaxSeries)+1)
	used := 0
	for _, typ := range ranked {
		if len(out) == MaxSeries {
			break
		}
		s := r.points(typ, t.byType[typ], times)
		n := payloadBytes(s)
		if used+n > MaxSeriesBytes {
			break
		}
		out, used = append(out, s), used+n
	}
	rest := &sum{}
	rest.merge(t.overflow)
	rest.merge(t.others)
	for _, typ := range ranked[len(out):] {
		rest.merge(t.byType[typ])
	}
	left := Other{Types: t.types - len(out), Overflow: t.overflow.total > 0}
	if left.Types > 0 || left.Overflow {
		for {
			o := r.other(rest, left, times)
			if used+payloadBytes(o) <= MaxSeriesBytes || len(out) == 0 {
				out = append(out, o)
				break
			}
			last := out[len(out)-1] // the smallest kept type makes room for the rest
			out, used = out[:len(out)-1], used-payloadBytes(last)
			rest.merge(t.byType[last.Type])
			left.Types++
		}
	}
	typed := out
	if n := len(out); n > 0 && out[n-1].Other != nil {
		typed = out[:n-1]
	}
	sort.Slice(typed, func(i, j int) bool { return typed[i].Type < typed[j].Type })
	return out
}

// payloadBytes is what series s adds to the response payload: its JSON,
// with each " and \ escaped once more in the payload's string, and a comma.
// JSON that encoding/json wrote holds no other character the payload
// escapes (it writes <, >, &, control characters and U+2028 as \u escapes).
func payloadBytes(s Series) int {
	b, err := json.Marshal(s)
	if err != nil {
		return MaxSeriesBytes // unreachable: a Series always encodes
	}
	return len(b) + bytes.Count(b, []byte(`"`)) + bytes.Count(b, []byte(`\`)) + 1
}

// times is the start of each bucket, as the answer writes it.
func (r Request) times() []string {
	out := make([]string, r.Buckets())
	for i := range out {
		out[i] = r.From.Add(time.Duration(i) * r.Interval).Format(time.RFC3339)
	}
	return out
}

func (r Request) points(typ string, s *sum, times []string) Series {
	out := Series{Type: typ, Points: make([]Point, len(times))}
	for i, t := range times {
		out.Points[i] = Point{T: t, Count: s.byBucket[i]}
	}
	return out
}

func (r Request) other(s *sum, o Other, times []string) Series {
	out := r.points("", s, times)
	out.Other = &o
	return out
}

// Label names s for a person: its type; "all types" for the one series of
// every event; for the "other" series, what it holds, such as "other (37
// more types, types not kept)".
func (s Series) Label() string {
	switch {
	case s.Other != nil:
		var parts []string
		if n := s.Other.Types; n == 1 {
			parts = append(parts, "1 more type")
		} else if n > 1 {
			parts = append(parts, fmt.Sprintf("%d more types", n))
		}
		if s.Other.Overflow {
			parts = append(parts, "types not kept")
		}
		return "other (" + strings.Join(parts, ", ") + ")"
	case s.Type == "":
		return "all types"
	}
	return s.Type
}
