package counts

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

// payload is resp as the Lambda runtime sends it: the answer's JSON as the
// body of API Gateway's response, itself JSON.
func payload(t *testing.T, resp Response) int {
	t.Helper()
	body, err := json.Marshal(resp)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(events.APIGatewayV2HTTPResponse{StatusCode: 200, Headers: map[string]string{"Content-Type": "application/json"}, Body: string(body)})
	if err != nil {
		t.Fatal(err)
	}
	return len(b)
}

// TestSeriesFit: answers by type of many types, at several intervals, with
// types that grow most when escaped and with overflow: each fits Lambda's
// 6 MB; it lists at most MaxSeries types, those with most events (ties
// bytewise), sorted bytewise; the "other" series says how many it left
// out; and every bucket adds up to the source's count.
func TestSeriesFit(t *testing.T) {
	day := time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		interval time.Duration
		types    int
		overflow bool
		listed   int // types listed; -1: as many as fit in MaxSeriesBytes
	}{
		{time.Minute, 300, true, -1},
		{time.Minute, 150, false, -1},
		{time.Hour, 300, false, MaxSeries},
		{time.Hour, 50, false, 50},
		{time.Hour, 50, true, 50},
		{24 * time.Hour, 0, true, 0},
	} {
		t.Run(fmt.Sprintf("%v %d types overflow %v", c.interval, c.types, c.overflow), func(t *testing.T) {
			r := Request{Source: "s", From: day, To: day.Add(24 * time.Hour), Interval: c.interval, Name: "x", GroupByType: true}
			rk, overflow := newRanker(), &sum{}
			want := make([]int64, r.Buckets())
			totals := map[string]int64{}
			for i := range c.types {
				typ := fmt.Sprintf("t%03d", i)
				if i%50 == 0 {
					typ += strings.Repeat(`<"\`+"\u2028", 40)
				}
				for j := range 1 + i%5 {
					b := (i*31 + j*7) % r.Buckets()
					rk.add(typ, b, 1)
					want[b]++
					totals[typ]++
				}
			}
			if c.overflow {
				for b := range r.Buckets() {
					overflow.add(b, 2)
					want[b] += 2
				}
			}
			resp := Response{Interval: "1m", From: r.From.Format(time.RFC3339), To: r.To.Format(time.RFC3339), Series: r.series(rk.tally(overflow))}
			size := payload(t, resp)
			if size > 6<<20 {
				t.Fatalf("the payload is %d bytes", size)
			}
			named := resp.Series
			var other *Other
			if n := len(named); n > 0 && named[n-1].Other != nil {
				other, named = named[n-1].Other, named[:n-1]
			}
			if c.listed >= 0 && len(named) != c.listed || len(named) > MaxSeries {
				t.Fatalf("%d types listed, want %d", len(named), c.listed)
			}
			if c.listed < 0 && size < 6<<20-2*payloadBytes(resp.Series[0]) {
				t.Errorf("the payload is %d bytes with %d types: another would have fit", size, len(named))
			}
			left := c.types - len(named)
			if (left > 0 || c.overflow) != (other != nil) || other != nil && (other.Types != left || other.Overflow != c.overflow) {
				t.Fatalf("other: %+v; want %d types left out, overflow %v", other, left, c.overflow)
			}
			least := int64(1 << 62)
			listed := map[string]bool{}
			for i, s := range named {
				if i > 0 && named[i-1].Type >= s.Type {
					t.Fatalf("%q after %q", s.Type, named[i-1].Type)
				}
				listed[s.Type] = true
				least = min(least, totals[s.Type])
			}
			for typ, n := range totals {
				if !listed[typ] && n > least {
					t.Fatalf("%q (%d events) left out, and a type of %d listed", typ, n, least)
				}
			}
			got := make([]int64, r.Buckets())
			for _, s := range resp.Series {
				for i, p := range s.Points {
					got[i] += p.Count
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("the series add up to\n%v\nwant\n%v", got, want)
			}
			t.Logf("%d series, %d bytes", len(resp.Series), size)
		})
	}
}

func TestSeriesLabel(t *testing.T) {
	for _, c := range []struct {
		s    Series
		want string
	}{
		{Series{Type: "a.b"}, "a.b"},
		{Series{}, "all types"},
		{Series{Other: &Other{Types: 1}}, "other (1 more type)"},
		{Series{Other: &Other{Types: 37, Overflow: true}}, "other (37 more types, types not kept)"},
		{Series{Other: &Other{Overflow: true}}, "other (types not kept)"},
	} {
		if got := c.s.Label(); got != c.want {
			t.Errorf("%+v: %q, want %q", c.s, got, c.want)
		}
	}
}
