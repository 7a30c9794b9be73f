package counts

import (
	"fmt"
	"time"

	"github.com/shardline/shardline/internal/cloudevent"
	"github.com/shardline/shardline/internal/echo"
	"github.com/shardline/shardline/internal/params"
)

// Route is the path of the counts in the HTTP API.
const Route = "/v1/counts"

// Bounds of GET /v1/counts.
const (
	DefaultRange = 24 * time.Hour
	MaxRange     = 31 * 24 * time.Hour
	MaxBuckets   = 1440
)

// Intervals are the bucket widths a chart may ask for, smallest first.
var Intervals = []struct {
	Name string
	D    time.Duration
}{{"1m", time.Minute}, {"5m", 5 * time.Minute}, {"15m", 15 * time.Minute}, {"1h", time.Hour}, {"1d", 24 * time.Hour}}

// Request is a parsed GET /v1/counts.
type Request struct {
	Source      string
	From, To    time.Time // rounded to the interval's UTC boundaries
	Interval    time.Duration
	Name        string // the interval as asked for, such as "1m"
	Type        string // "" when not filtered
	GroupByType bool
}

// Buckets is the number of buckets of the range.
func (r Request) Buckets() int { return int(r.To.Sub(r.From) / r.Interval) }

// ParseRequest reads the query string of GET /v1/counts at now. Every
// error is a *params.Error naming the parameter.
func ParseRequest(rawQuery string, now time.Time) (Request, error) {
	v, err := params.Parse(rawQuery, "source", "from", "to", "interval", "type", "group_by")
	if err != nil {
		return Request{}, err
	}
	var r Request
	if r.Source, err = v.Required("source", cloudevent.MaxAttrBytes); err != nil {
		return Request{}, err
	}
	rg, err := v.Range(now, DefaultRange, MaxRange)
	if err != nil {
		return Request{}, err
	}
	if r.Type, err = v.Filter("type", cloudevent.MaxAttrBytes); err != nil {
		return Request{}, err
	}
	if g, ok := v.Get("group_by"); ok {
		if g != "type" {
			return Request{}, params.Errorf("group_by", "is %s; the counts can be grouped by type only (group_by=type), or not at all", echo.Quote(g))
		}
		r.GroupByType = true
	}
	return r, r.setInterval(v, rg)
}

// setInterval picks the interval (asked for, or the smallest giving at most
// MaxBuckets buckets) and rounds the range to its boundaries.
func (r *Request) setInterval(v params.Values, rg params.Range) error {
	name, asked := v.Get("interval")
	for _, iv := range Intervals {
		if asked && iv.Name != name {
			continue
		}
		r.Name, r.Interval = iv.Name, iv.D
		r.To = rg.To.Add(iv.D - 1).Truncate(iv.D)
		r.From = rg.From.Truncate(iv.D)
		if _, ok := v.Get("from"); !ok {
			// The default range is the last DefaultRange up to the rounded
			// end, so that a day at 1m is 1,440 buckets, not 1,441.
			r.From = r.To.Add(-DefaultRange).Truncate(iv.D)
		}
		if r.Buckets() <= MaxBuckets {
			return nil
		}
		if asked {
			return params.Errorf("interval", "%s gives %d buckets from %s to %s; at most %d: ask for a wider interval or a shorter range",
				name, r.Buckets(), r.From.Format(time.RFC3339), r.To.Format(time.RFC3339), MaxBuckets)
		}
	}
	if asked {
		return params.Errorf("interval", "is %s; want 1m, 5m, 15m, 1h or 1d", echo.Quote(name))
	}
	return fmt.Errorf("counts: no interval fits %s", rg.To.Sub(rg.From)) // unreachable: 1d fits 31 days
}
