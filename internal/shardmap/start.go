package shardmap

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/shardline/shardline/pkg/bucketing"
)

// start is the first step of a new day of stream, given the configured
// counts in first: more shards if the previous day reached more (see
// Config.Carry), and a day GSI bucket if the previous day was quiet (see
// Day.Quiet). *prev is the previous day as read beside the day's record,
// or nil, and then start reads it and keeps it there.
func (r *Registry) start(ctx context.Context, s bucketing.Stream, day string, first bucketing.Step, prev **previous) (bucketing.Step, error) {
	if *prev == nil {
		prevDay, ok := previousDay(day)
		if !ok {
			return r.Config.copies(s.Source, first, false), nil
		}
		p, err := r.readPrevious(ctx, s, prevDay)
		if err != nil {
			return first, err
		}
		*prev = &p
	}
	pd := (*prev).day
	if pd.Sched == nil {
		return r.Config.copies(s.Source, first, false), nil
	}
	if r.Config.Carry {
		last := pd.Sched.Last()
		pn, pg := last.Shards, last.GSIShards
		if last.NoGSICopy {
			// A day without copies never raises its GSI count: what
			// its events needed of the GSI is what they needed of the
			// table (a key takes an hour's events, or a day's, at the
			// same rate).
			pg = pn
		}
		if len(pd.Sched) == 1 {
			pn, pg = pn/2, pg/2
		}
		first.Shards, first.GSIShards = max(first.Shards, pn), max(first.GSIShards, pg)
	}
	quiet := pd.Quiet() // a raised day is not quiet
	first.DayBucket = quiet
	return r.Config.copies(s.Source, first, quiet), nil
}

// Copies says on which days a source's events get a GSI copy: the
// ingest function's GSI_COPIES.
type Copies string

// The settings of Copies.
const (
	// CopiesAlways gives every event a GSI copy: a second write unit an
	// event (at least; a write unit per KB of what the GSI projects). The
	// default.
	CopiesAlways Copies = "always"
	// CopiesWhereItPays gives a day's events a copy only when the day's
	// GSI keys are fewer than its table keys, so that the GSI reads a page
	// in fewer requests than the table's shards: a day with one table
	// shard, or as many GSI shards as table shards, has none. A day that
	// follows a quiet day (Day.Quiet) starts on one table shard (unless
	// the source's count is an override) and so without copies: its pages
	// are one Query of one key, as its GSI day bucket's were. Adaptive
	// sharding raises its table count if it turns busy.
	CopiesWhereItPays Copies = "where-it-pays"
)

// ParseCopies reads a Copies setting; empty is CopiesAlways.
func ParseCopies(s string) (Copies, error) {
	switch Copies(s) {
	case "", CopiesAlways:
		return CopiesAlways, nil
	case CopiesWhereItPays:
		return CopiesWhereItPays, nil
	}
	return "", fmt.Errorf("%q: want %s or %s", s, CopiesAlways, CopiesWhereItPays)
}

// copies decides whether the day of source that starts with first gets
// GSI copies, and returns the first step with the decision in it; quiet
// says the day before was quiet.
func (c Config) copies(source string, first bucketing.Step, quiet bool) bucketing.Step {
	if c.Copies != CopiesWhereItPays {
		return first
	}
	if _, fixed := c.Shards.Overrides[source]; quiet && !fixed {
		first.Shards = 1
	}
	if first.Shards <= first.GSIShards {
		// The GSI would read a page's hour in as many requests as the
		// table's shards read its day in: the copy saves nothing.
		first.NoGSICopy, first.DayBucket = true, false
	}
	return first
}

// previous is what creating a day's record needs of the day before: its
// shard record and hour index.
type previous struct {
	day Day
}

// previousDay is the day before day, a DayLayout string.
func previousDay(day string) (string, bool) {
	d, err := time.Parse(bucketing.DayLayout, day)
	if err != nil {
		return "", false
	}
	return d.AddDate(0, 0, -1).Format(bucketing.DayLayout), true
}

// readDay reads the record of stream on day; withPrevious reads the
// previous day's record and hour index at the same time, into *prev.
func (r *Registry) readDay(ctx context.Context, s bucketing.Stream, day string, withPrevious bool, prev **previous) (record, error) {
	prevDay, ok := previousDay(day)
	if !withPrevious || !ok || s.Space != bucketing.Events {
		return r.read(ctx, s.MetaPK(day))
	}
	var rec record
	var p previous
	var recErr, prevErr error
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		rec, recErr = r.read(ctx, s.MetaPK(day))
	}()
	p, prevErr = r.readPrevious(ctx, s, prevDay)
	wg.Wait()
	if recErr != nil {
		return record{}, recErr
	}
	if prevErr == nil {
		*prev = &p
	}
	// A failed read of the previous day matters only if the day's record
	// is missing; start then reads it again.
	return rec, nil
}

// readPrevious reads the shard record and hour index of stream on prevDay,
// both at once, and eventually consistent: half the read units of a
// strongly consistent read, which matters at midnight, when every
// container that writes a source reads its previous day at once. A day's
// schedule changes no more once the day is within Lead of its end (no step
// may start after the day), and the next day's record is created no sooner
// than cloudevent.MaxFuture before the next day begins, minutes later: a
// read a second stale sees the final schedule.
func (r *Registry) readPrevious(ctx context.Context, s bucketing.Stream, prevDay string) (previous, error) {
	var rec record
	var hours *dynamodb.GetItemOutput
	var recErr, hoursErr error
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		rec, recErr = r.get(ctx, s.MetaPK(prevDay), false)
	}()
	hours, hoursErr = r.Client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(r.Table), Key: HoursKey(s, prevDay)})
	wg.Wait()
	if recErr != nil {
		return previous{}, recErr
	}
	if hoursErr != nil {
		return previous{}, fmt.Errorf("read hour index of %s: %w", s.MetaPK(prevDay), hoursErr)
	}
	p := previous{day: Day{Sched: rec.sched}}
	if rec.sched != nil && hours.Item != nil {
		if err := p.day.addHours(hours.Item); err != nil {
			return previous{}, fmt.Errorf("%s: %w", s.MetaPK(prevDay), err)
		}
	}
	return p, nil
}
