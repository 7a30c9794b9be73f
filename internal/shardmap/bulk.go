package shardmap

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/shardline/shardline/internal/backoff"
	"github.com/shardline/shardline/internal/batchget"
	"github.com/shardline/shardline/internal/schema"
	"github.com/shardline/shardline/pkg/bucketing"
)

// Want is a (stream, day) a caller is about to set up (ScheduleRead),
// whose reads ReadAhead makes in bulk.
type Want struct {
	Stream bucketing.Stream
	Day    string // a bucketing.DayLayout string
}

// Read is what ReadAhead read of a Want, for its ScheduleRead: the day's
// record, and the previous day's record and hour index when the day may
// have to be created. What it could not read, ScheduleRead reads itself;
// the zero Read holds nothing.
type Read struct {
	rec  *record   // the day's record (its sched nil: none); nil: not read
	at   time.Time // when it was read
	prev *previous // the previous day; nil: not read
}

// aheadRequests bounds ReadAhead's requests in flight: 16 of 100 keys
// read 530 new streams at once.
const aheadRequests = 16

// aheadRounds reads again the keys DynamoDB left unprocessed, after a
// jittered pause that doubles up to 400 ms, for eight rounds at most and
// never past the deadline: what it leaves, Schedule reads on its own.
var aheadRounds = batchget.Rounds{
	Pause: backoff.Policy{Base: 25 * time.Millisecond, Max: 400 * time.Millisecond}.Wait,
	Most:  8,
	Sleep: backoff.SleepWithin,
}

// ReadAhead reads for wants what their Schedule calls would read one by
// one, in BatchGetItem requests of up to 100 keys, all at once: each day's
// record strongly consistent, and the previous day's record and hour index
// eventually consistent where Schedule would read them (a day this
// registry has not met, whose previous day it has not read yet). An item
// costs the same read units in a BatchGetItem as in a GetItem, so a batch
// of new streams pays what it did, in a request per 100 keys instead of
// one a key: 500 new sources, 15 requests instead of 1,500. A want this
// registry holds fresh reads nothing, as its Schedule call would not.
//
// Keys DynamoDB leaves unprocessed are read again (aheadRounds) within
// ctx's deadline. The keys of a request that fails, or left unprocessed,
// are missing from their wants' Reads, whose ScheduleRead then reads them
// itself; err says why (the Reads hold everything that was read).
func (r *Registry) ReadAhead(ctx context.Context, wants []Want) ([]Read, error) {
	reads := make([]Read, len(wants))
	now := r.now()
	b := bulk{{}, {consistent: true}}
	for i, w := range wants {
		key := w.Stream.MetaPK(w.Day)
		c, seen := r.lastRead(key)
		if r.fresh(c, seen, w.Day, now) {
			continue
		}
		reads[i].at = now
		b[1].add(metaKey(key))
		if prevDay, ok := previousDay(w.Day); ok && !seen && w.Stream.Space == bucketing.Events && !r.previousKnown(key, now) {
			b[0].add(metaKey(w.Stream.MetaPK(prevDay)), HoursKey(w.Stream, prevDay))
		}
	}
	if len(b[0].keys)+len(b[1].keys) == 0 {
		return reads, nil
	}
	err := b.read(ctx, r.Client, r.Table)
	for i, w := range wants {
		if !reads[i].at.IsZero() {
			reads[i].rec, reads[i].prev = b.day(w.Stream, w.Day)
		}
	}
	if err != nil {
		return reads, fmt.Errorf("read ahead %d shard records: %w", len(b[1].keys), err)
	}
	return reads, nil
}

// bulk is ReadAhead's reads: eventually consistent ([0]) and strongly ([1]).
type bulk [2]keySet

// keySet is keys read one way, each once (a BatchGetItem refuses a key
// twice), and what was read of them.
type keySet struct {
	consistent bool
	keys       []batchget.Key
	asked      map[[2]string]bool

	mu     sync.Mutex
	items  map[[2]string]map[string]types.AttributeValue
	unread map[[2]string]bool // keys not read: their request failed, or left them unprocessed
}

func keyOf(k batchget.Key) [2]string {
	return [2]string{schema.S(k[schema.PK]), schema.S(k[schema.SK])}
}

func (ks *keySet) add(keys ...batchget.Key) {
	if ks.asked == nil {
		ks.asked = map[[2]string]bool{}
	}
	for _, k := range keys {
		if !ks.asked[keyOf(k)] {
			ks.asked[keyOf(k)] = true
			ks.keys = append(ks.keys, k)
		}
	}
}

// got is the item at k, and whether k was asked for and read (found or
// not).
func (ks *keySet) got(k batchget.Key) (map[string]types.AttributeValue, bool) {
	return ks.items[keyOf(k)], ks.asked[keyOf(k)] && !ks.unread[keyOf(k)]
}

// read reads b's keys, aheadRequests requests at a time; err joins the
// errors of the requests that failed.
func (b *bulk) read(ctx context.Context, c API, table string) error {
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	sem := make(chan struct{}, aheadRequests)
	for i := range b {
		ks := &b[i]
		ks.items, ks.unread = map[[2]string]map[string]types.AttributeValue{}, map[[2]string]bool{}
		for keys := ks.keys; len(keys) > 0; {
			chunk := keys[:min(len(keys), batchget.MaxKeys)]
			keys = keys[len(chunk):]
			sem <- struct{}{}
			wg.Go(func() {
				defer func() { <-sem }()
				if err := ks.read(ctx, c, table, chunk); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			})
		}
	}
	wg.Wait()
	return errors.Join(errs...)
}

// read reads keys (at most 100) and what DynamoDB leaves of them
// unprocessed, in aheadRounds.
func (ks *keySet) read(ctx context.Context, c API, table string, keys []batchget.Key) error {
	left, err := aheadRounds.Read(ctx, keys, func(ctx context.Context, keys []batchget.Key) ([]batchget.Key, error) {
		out, err := c.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: map[string]types.KeysAndAttributes{
			table: {Keys: keys, ConsistentRead: aws.Bool(ks.consistent)}}})
		if err != nil {
			return nil, err
		}
		ks.mu.Lock()
		for _, it := range out.Responses[table] {
			ks.items[keyOf(it)] = it
		}
		ks.mu.Unlock()
		return out.UnprocessedKeys[table].Keys, nil
	})
	if err == nil {
		return nil
	}
	ks.mu.Lock()
	for _, k := range left {
		ks.unread[keyOf(k)] = true
	}
	ks.mu.Unlock()
	kind := "eventually consistent"
	if ks.consistent {
		kind = "strongly consistent"
	}
	return fmt.Errorf("%d of %d keys read %s left unread: %w", len(left), len(keys), kind, err)
}

// day is what b read of stream's day: its record, and its previous day's
// record and hour index, each nil when not read (or not decoded: Schedule
// reads it again and says why).
func (b *bulk) day(s bucketing.Stream, day string) (*record, *previous) {
	var rec *record
	if it, ok := b[1].got(metaKey(s.MetaPK(day))); ok {
		if r, err := decodeOrNone(it); err == nil {
			rec = &r
		}
	}
	prevDay, ok := previousDay(day)
	if !ok {
		return rec, nil
	}
	ri, rok := b[0].got(metaKey(s.MetaPK(prevDay)))
	hi, hok := b[0].got(HoursKey(s, prevDay))
	if !rok || !hok {
		return rec, nil
	}
	pr, err := decodeOrNone(ri)
	if err != nil {
		return rec, nil
	}
	p := previous{day: Day{Sched: pr.sched}}
	if pr.sched != nil && hi != nil {
		if p.day.addHours(hi) != nil {
			return rec, nil
		}
	}
	return rec, &p
}

// decodeOrNone is decode of item, or no record for no item.
func decodeOrNone(item map[string]types.AttributeValue) (record, error) {
	if item == nil {
		return record{}, nil
	}
	return decode(item)
}
