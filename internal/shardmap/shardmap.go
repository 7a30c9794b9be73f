// Package shardmap records, for every (stream, day), the shard counts that
// were in effect, so that readers can find every shard a day was written to
// with one small read, and writers place a retried event on the same item
// even when a count was raised in between.
//
// The record is one item per (stream, day), key bucketing.Stream.MetaPK, whose
// "sched" attribute is a bucketing.Schedule. The first writer of a day creates
// it with the configured counts from minute 0. When the configuration later
// asks for more shards, a writer appends a step that starts Lead after now
// (rounded up to a minute): no event already written can carry a time that
// late (events are at most cloudevent.MaxFuture ahead), and every writer,
// re-reading the record at least every CacheFor, learns of the step before it
// takes effect. Counts only grow within a day; a lower configuration applies
// from the next day's record.
package shardmap

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/shardline/shardline/internal/catalog"
	"github.com/shardline/shardline/internal/cloudevent"
	"github.com/shardline/shardline/internal/schema"
	"github.com/shardline/shardline/pkg/bucketing"
)

// CacheFor is how long a writer trusts a schedule it read.
const CacheFor = time.Minute

// Lead is how far after now a new step starts.
const Lead = cloudevent.MaxFuture + 2*CacheFor

// metaSK is the sort key of every shard-count record.
const metaSK = "shards"

// API is the part of the DynamoDB client the registry uses.
type API interface {
	GetItem(context.Context, *dynamodb.GetItemInput, ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	PutItem(context.Context, *dynamodb.PutItemInput, ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
}

// Config is what a writer wants: the counts it is configured with.
type Config struct {
	Shards     bucketing.Counts // base-table shards per event source
	GSIShards  bucketing.Counts // GSI shards per event source
	Quarantine int              // base-table shards of the quarantine
	Retention  time.Duration    // how long records live; the shard record outlives the day by this much
}

func (c Config) want(s bucketing.Stream) (int, int) {
	if s.Space == bucketing.Quarantine {
		return c.Quarantine, 1
	}
	return c.Shards.For(s.Source), c.GSIShards.For(s.Source)
}

// Registry reads and writes shard-count records. It is safe for concurrent
// use; one per container caches what it read.
type Registry struct {
	Client API
	Table  string
	Config Config
	Now    func() time.Time // defaults to time.Now

	mu    sync.Mutex
	cache map[string]cached
}

type cached struct {
	sched bucketing.Schedule
	at    time.Time
}

func (r *Registry) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// Schedule is the schedule writers must use for stream on day (a
// bucketing.DayLayout string), creating or extending the record as the
// configuration asks.
func (r *Registry) Schedule(ctx context.Context, s bucketing.Stream, day string) (bucketing.Schedule, error) {
	key := s.MetaPK(day)
	r.mu.Lock()
	c, ok := r.cache[key]
	r.mu.Unlock()
	now := r.now()
	if ok && now.Sub(c.at) < CacheFor {
		return c.sched, nil
	}
	wantN, wantG := r.Config.want(s)
	for range 8 { // each turn loses a race to another writer; eight is plenty
		sched, ver, err := r.read(ctx, key)
		if err != nil {
			return nil, err
		}
		next := extend(sched, day, wantN, wantG, now)
		if next == nil { // nothing to change
			r.remember(key, sched, now)
			return sched, nil
		}
		if sched == nil && s.Space == bucketing.Events {
			// The first writer of the day lists the source in the day's
			// catalogue before it creates the record: once the record
			// exists no writer comes this way again, so the entry must
			// not be able to go missing after it.
			if err := catalog.Record(ctx, r.Client, r.Table, s.Source, day, r.expiry(day)); err != nil {
				return nil, err
			}
		}
		err = r.write(ctx, key, day, next, ver)
		var cond *types.ConditionalCheckFailedException
		if errors.As(err, &cond) {
			continue
		}
		if err != nil {
			return nil, err
		}
		r.remember(key, next, now)
		return next, nil
	}
	return nil, fmt.Errorf("shard record %s: too many concurrent updates", key)
}

// extend returns the schedule to store, or nil when sched is fine as it is.
func extend(sched bucketing.Schedule, day string, wantN, wantG int, now time.Time) bucketing.Schedule {
	if sched == nil {
		return bucketing.Schedule{{From: 0, Shards: wantN, GSIShards: wantG}}
	}
	last := sched.Last()
	if wantN <= last.Shards && wantG <= last.GSIShards {
		return nil
	}
	from := now.Add(Lead).Truncate(time.Minute).Add(time.Minute).UTC()
	if bucketing.Day(from) != day {
		// The day is over, or has not begun, by the time the step would
		// start: a past day keeps its counts, and a future day gets the
		// step once it has begun.
		return nil
	}
	m := from.Hour()*60 + from.Minute()
	if m <= last.From {
		return nil
	}
	return append(sched[:len(sched):len(sched)], bucketing.Step{From: m, Shards: max(wantN, last.Shards), GSIShards: max(wantG, last.GSIShards)})
}

func (r *Registry) remember(key string, s bucketing.Schedule, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cache == nil {
		r.cache = map[string]cached{}
	}
	r.cache[key] = cached{s, now}
}

// Cached is the schedule of stream on day as a reader that tolerates
// eventual consistency needs it: a record read within CacheFor is reused
// (the writers' cache, if this registry also writes). That is safe because a
// raise takes effect Lead after it is recorded, later than any event can be
// written before a cached copy expires. An absent record is not cached: it
// may appear any moment. read says whether DynamoDB was asked.
func (r *Registry) Cached(ctx context.Context, s bucketing.Stream, day string) (sched bucketing.Schedule, read bool, err error) {
	key := s.MetaPK(day)
	now := r.now()
	r.mu.Lock()
	c, ok := r.cache[key]
	r.mu.Unlock()
	if ok && now.Sub(c.at) < CacheFor {
		return c.sched, false, nil
	}
	sched, _, err = r.read(ctx, key)
	if err != nil {
		return nil, true, err
	}
	if sched != nil {
		r.remember(key, sched, now)
	}
	return sched, true, nil
}

// Lookup reads the schedule of stream on day without changing anything;
// found is false when nothing was written that day. The read is strongly
// consistent, as the record is written before the first event of the day.
func (r *Registry) Lookup(ctx context.Context, s bucketing.Stream, day string) (sched bucketing.Schedule, found bool, err error) {
	sched, _, err = r.read(ctx, s.MetaPK(day))
	return sched, sched != nil, err
}

func (r *Registry) read(ctx context.Context, key string) (bucketing.Schedule, int, error) {
	out, err := r.Client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(r.Table),
		Key:            metaKey(key),
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return nil, 0, fmt.Errorf("read shard record %s: %w", key, err)
	}
	if out.Item == nil {
		return nil, 0, nil
	}
	sched, ver, err := decode(out.Item)
	if err != nil {
		return nil, 0, fmt.Errorf("shard record %s: %w", key, err)
	}
	return sched, ver, nil
}

func (r *Registry) write(ctx context.Context, key, day string, s bucketing.Schedule, ver int) error {
	item := metaKey(key)
	steps := make([]types.AttributeValue, len(s))
	for i, st := range s {
		steps[i] = &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{
			"from": num(st.From), "n": num(st.Shards), "g": num(st.GSIShards),
		}}
	}
	item[schema.Schedule] = &types.AttributeValueMemberL{Value: steps}
	item[schema.Version] = num(ver + 1)
	if d, err := time.Parse(bucketing.DayLayout, day); err == nil && r.Config.Retention > 0 {
		item[schema.TTL] = &types.AttributeValueMemberN{Value: strconv.FormatInt(d.Add(24*time.Hour+r.Config.Retention).Unix(), 10)}
	}
	in := &dynamodb.PutItemInput{TableName: aws.String(r.Table), Item: item}
	if ver == 0 {
		in.ConditionExpression = aws.String("attribute_not_exists(#pk)")
		in.ExpressionAttributeNames = map[string]string{"#pk": schema.PK}
	} else {
		in.ConditionExpression = aws.String("#v = :v")
		in.ExpressionAttributeNames = map[string]string{"#v": schema.Version}
		in.ExpressionAttributeValues = map[string]types.AttributeValue{":v": num(ver)}
	}
	if _, err := r.Client.PutItem(ctx, in); err != nil {
		return fmt.Errorf("write shard record %s: %w", key, err)
	}
	return nil
}

// expiry is when the records of day may go: a day after its last event
// expires; zero (never) when no retention is configured.
func (r *Registry) expiry(day string) time.Time {
	d, err := time.Parse(bucketing.DayLayout, day)
	if err != nil || r.Config.Retention <= 0 {
		return time.Time{}
	}
	return d.Add(2*24*time.Hour + r.Config.Retention)
}

func metaKey(pk string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		schema.PK: &types.AttributeValueMemberS{Value: pk},
		schema.SK: &types.AttributeValueMemberS{Value: metaSK},
	}
}

func num(n int) types.AttributeValue { return &types.AttributeValueMemberN{Value: strconv.Itoa(n)} }

func decode(item map[string]types.AttributeValue) (bucketing.Schedule, int, error) {
	l, ok := item[schema.Schedule].(*types.AttributeValueMemberL)
	if !ok {
		return nil, 0, fmt.Errorf("no %q list", schema.Schedule)
	}
	ver, err := intAttr(item[schema.Version])
	if err != nil {
		return nil, 0, fmt.Errorf("version: %w", err)
	}
	s := make(bucketing.Schedule, 0, len(l.Value))
	for i, v := range l.Value {
		m, ok := v.(*types.AttributeValueMemberM)
		if !ok {
			return nil, 0, fmt.Errorf("step %d is not a map", i)
		}
		var st bucketing.Step
		for name, dst := range map[string]*int{"from": &st.From, "n": &st.Shards, "g": &st.GSIShards} {
			if *dst, err = intAttr(m.Value[name]); err != nil {
				return nil, 0, fmt.Errorf("step %d %s: %w", i, name, err)
			}
		}
		s = append(s, st)
	}
	if err := s.Validate(); err != nil {
		return nil, 0, err
	}
	return s, ver, nil
}

func intAttr(v types.AttributeValue) (int, error) {
	n, ok := v.(*types.AttributeValueMemberN)
	if !ok {
		return 0, fmt.Errorf("not a number")
	}
	return strconv.Atoi(n.Value)
}
