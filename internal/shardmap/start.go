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
			return first, nil
		}
		p, err := r.readPrevious(ctx, s, prevDay)
		if err != nil {
			return first, err
		}
		*prev = &p
	}
	pd := (*prev).day
	if pd.Sched == nil {
		return first, nil
	}
	if r.Config.Carry {
		last := pd.Sched.Last()
		pn, pg := last.Shards, last.GSIShards
		if len(pd.Sched) == 1 {
			pn, pg = pn/2, pg/2
		}
		first.Shards, first.GSIShards = max(first.Shards, pn), max(first.GSIShards, pg)
	}
	first.DayBucket = pd.Quiet() // a raised day is not quiet
	return first, nil
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
