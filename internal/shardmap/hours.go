package shardmap

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/shardline/shardline/internal/schema"
	"github.com/shardline/shardline/pkg/bucketing"
)

// hoursSK is the sort key of a day's hour index, beside its shard record.
const hoursSK = "hours"

// hintPrefix names an hour's hint in the hour index: "n07" for 07:00–08:00.
const hintPrefix = "n"

// HoursAPI is the part of the DynamoDB client the hour index writes with.
type HoursAPI interface {
	UpdateItem(context.Context, *dynamodb.UpdateItemInput, ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
}

// HoursReadAPI is the part of the DynamoDB client Hours uses: it reads an
// hour index before it marks it.
type HoursReadAPI interface {
	HoursAPI
	GetItem(context.Context, *dynamodb.GetItemInput, ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
}

// HoursKey is the key of the hour index of stream on day: the shard
// record's partition, sort key "hours". Its "hrs" number set holds the UTC
// hours (0–23) in which an event of the day was written; a reader walks only
// those hour buckets.
func HoursKey(s bucketing.Stream, day string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		schema.PK: &types.AttributeValueMemberS{Value: s.MetaPK(day)},
		schema.SK: &types.AttributeValueMemberS{Value: hoursSK},
	}
}

// Hours marks, before a writer stores events, the hours they fall in. A
// marker is written before the first event of its hour, so a reader that
// finds no marker for an hour may skip it. Adding to a set is idempotent,
// and a container remembers what it marked or found marked.
//
// A container reads the index (an eventually consistent GetItem, half a
// read unit) before it marks an hour, and writes only the hours it does not
// find: a (stream, day, hour) costs one write for the fleet, or a few when
// containers meet it at once, and a read per container. A read costs a
// tenth of the write it saves (issue 29: with a write per container, a
// quiet source spread over 64 Kinesis shards paid a mark for every few of
// its events). A stale read only misses a mark, and then the container
// writes it again; it never shows one that is not there.
//
// A source that every container writes would have every container mark
// its next hour in that hour's first second: at the scale shardline claims
// a fleet of 2,000 containers, 2,000 writes in a second on one key, twice a
// partition's ceiling. So a container that writes a source busily marks its
// next hour ahead of time (Ahead), at a moment of its own in the hour's
// last AheadFor, and the fleet's marks of the source spread over it.
type Hours struct {
	Client    HoursReadAPI
	Table     string
	Retention time.Duration // the index of a day lives as long as its events

	mu     sync.Mutex
	marked map[hourKey]bool
	wrote  map[hourKey]int // events this container marked hours for
	seed   uint64          // this container's, for the moment it marks ahead
}

// AheadFor is how long before an hour begins a container may mark it
// (Hours.Ahead): the fleet's marks of a busy source's next hour spread over
// this much time.
const AheadFor = 15 * time.Minute

type hourKey struct {
	stream bucketing.Stream
	day    string
	hour   int
}

// maxMarked bounds the memory of what a container marked; past it the
// memory starts again, which costs one idempotent write per hour.
const maxMarked = 1 << 16

// Mark records that stream is about to write, on day, counts[h] events in
// each UTC hour h (0 for 00:00–01:00) where counts[h] > 0.
//
// Beside each hour it adds a hint: how many events the writer knew of when
// it marked the hour. The containers that mark an hour (the first to meet
// it, and any that read the index before its mark showed) add their first
// batch's count, so the hint is a lower bound of the hour's events (writes
// may still fail), near the truth for a quiet hour and far below it for a
// busy one: enough for a reader to price a page, never to decide what it
// returns.
func (h *Hours) Mark(ctx context.Context, s bucketing.Stream, day string, counts [24]int32) error {
	var hours uint32
	for hr, n := range counts {
		if n > 0 {
			hours |= 1 << hr
		}
	}
	h.count(s, day, counts)
	todo := h.unmarked(s, day, hours)
	if len(todo) == 0 {
		return nil
	}
	var from time.Time // the TTL's: the day's end and a day, plus the retention
	if d, err := time.Parse(bucketing.DayLayout, day); err == nil {
		from = d.Add(2 * 24 * time.Hour)
	}
	todo, err := h.notMarked(ctx, s, day, todo, from)
	if err != nil || len(todo) == 0 {
		return err
	}
	set := make([]string, len(todo))
	names := map[string]string{"#h": schema.Hours}
	values := map[string]types.AttributeValue{}
	adds := []string{"#h :h"}
	for i, hr := range todo {
		set[i] = strconv.Itoa(hr)
		k := fmt.Sprintf("%02d", hr)
		names["#n"+k] = hintPrefix + k
		values[":n"+k] = &types.AttributeValueMemberN{Value: strconv.Itoa(int(counts[hr]))}
		adds = append(adds, "#n"+k+" :n"+k)
	}
	values[":h"] = &types.AttributeValueMemberNS{Value: set}
	if err := h.write(ctx, HoursKey(s, day), strings.Join(adds, ", "), names, values, from); err != nil {
		return fmt.Errorf("mark hours %v of %s: %w", todo, s.MetaPK(day), err)
	}
	h.remember(s, day, todo)
	return nil
}

// Ahead marks the hour after now's for stream, without a hint, once this
// container has written QuietHour events of stream in now's hour and now
// is past a moment of the container's own in the hour's last AheadFor
// (but for its last minute).
// Until then, and once it has, it does nothing. When the hour comes the
// container finds it marked and writes nothing: the hour's hint then holds
// only what containers that did not mark it ahead add, and none when all
// did, so that a busy source's hours are not taken for quiet ones (see
// Day.Quiet). A quiet source is never marked ahead: its hours stay
// exactly those that hold events.
func (h *Hours) Ahead(ctx context.Context, s bucketing.Stream, now time.Time) error {
	now = now.UTC()
	next := now.Truncate(time.Hour).Add(time.Hour)
	if !h.due(s, now, next) {
		return nil
	}
	day, hr := bucketing.Day(next), next.Hour()
	from := next.Truncate(24 * time.Hour).Add(2 * 24 * time.Hour)
	if todo, err := h.notMarked(ctx, s, day, []int{hr}, from); err != nil || len(todo) == 0 {
		return err
	}
	names := map[string]string{"#h": schema.Hours}
	values := map[string]types.AttributeValue{":h": &types.AttributeValueMemberNS{Value: []string{strconv.Itoa(hr)}}}
	if err := h.write(ctx, HoursKey(s, day), "#h :h", names, values, from); err != nil {
		return fmt.Errorf("mark hour %d of %s ahead: %w", hr, s.MetaPK(day), err)
	}
	h.remember(s, day, []int{hr})
	return nil
}

// notMarked is those of hours that the hour index of (s, day) does not
// hold yet, as an eventually consistent read finds it; it remembers the
// others as marked. An index whose TTL is earlier than this container's
// (from plus its retention) counts as holding none: the write must lengthen
// it, or readers would skip hours whose events outlive it.
func (h *Hours) notMarked(ctx context.Context, s bucketing.Stream, day string, hours []int, from time.Time) ([]int, error) {
	out, err := h.Client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(h.Table), Key: HoursKey(s, day),
		ProjectionExpression:     aws.String("#h, #e"),
		ExpressionAttributeNames: map[string]string{"#h": schema.Hours, "#e": schema.TTL},
	})
	if err != nil {
		return nil, fmt.Errorf("read hour index %s: %w", s.MetaPK(day), err)
	}
	if out.Item == nil {
		return hours, nil
	}
	if e, ok := out.Item[schema.TTL].(*types.AttributeValueMemberN); ok && h.Retention > 0 && !from.IsZero() {
		if ttl, err := strconv.ParseInt(e.Value, 10, 64); err != nil || ttl < from.Add(h.Retention).Unix() {
			return hours, nil
		}
	}
	have, err := DecodeHours(out.Item)
	if err != nil {
		return hours, nil // written again, whole
	}
	var found []int
	var todo []int
	for _, hr := range hours {
		if slices.Contains(have, hr) {
			found = append(found, hr)
		} else {
			todo = append(todo, hr)
		}
	}
	h.remember(s, day, found)
	return todo, nil
}

// write adds adds (an ADD clause's items) to the hour index at key, and
// sets its TTL to from plus the retention (the zero from: no TTL) unless
// the TTL is later already: a writer with a shorter retention (an
// operator's command run with a smaller RETENTION_DAYS) must not make the
// index expire before the day's events, or readers would skip their hours.
// Update expressions have no max(), so the TTL goes under a condition;
// when it fails, the marks go again without the TTL: a second request only
// for such a writer's marks.
func (h *Hours) write(ctx context.Context, key map[string]types.AttributeValue, adds string,
	names map[string]string, values map[string]types.AttributeValue, from time.Time) error {
	in := &dynamodb.UpdateItemInput{
		TableName: aws.String(h.Table), Key: key, UpdateExpression: aws.String("ADD " + adds),
		ExpressionAttributeNames: names, ExpressionAttributeValues: values,
	}
	if h.Retention > 0 && !from.IsZero() {
		ttl := *in
		ttl.UpdateExpression = aws.String("ADD " + adds + " SET #e = :e")
		ttl.ConditionExpression = aws.String("attribute_not_exists(#e) OR #e <= :e")
		ttl.ExpressionAttributeNames, ttl.ExpressionAttributeValues = maps.Clone(names), maps.Clone(values)
		ttl.ExpressionAttributeNames["#e"] = schema.TTL
		ttl.ExpressionAttributeValues[":e"] = &types.AttributeValueMemberN{Value: strconv.FormatInt(from.Add(h.Retention).Unix(), 10)}
		_, err := h.Client.UpdateItem(ctx, &ttl)
		if cond := (*types.ConditionalCheckFailedException)(nil); !errors.As(err, &cond) {
			return err
		}
	}
	_, err := h.Client.UpdateItem(ctx, in)
	return err
}

// due says whether this container marks next, the hour after now's, for s
// now: it wrote s busily in now's hour, has not marked next, and now is
// past its moment to.
func (h *Hours) due(s bucketing.Stream, now, next time.Time) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.wrote[hourKey{s, bucketing.Day(now), now.Hour()}] < QuietHour || h.marked[hourKey{s, bucketing.Day(next), next.Hour()}] {
		return false
	}
	if h.seed == 0 {
		h.seed = rand.Uint64() | 1
	}
	// A moment between AheadFor and a minute before next, uniform over
	// containers: a busy container writes the source again within the
	// minute, so it marks ahead rather than when the hour comes.
	x := bucketing.Hash(s.Source, next.Format(bucketing.HourLayout)) ^ h.seed
	x ^= x >> 29
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 32
	lead := time.Minute + time.Duration(x%uint64(AheadFor-time.Minute))
	return !now.Before(next.Add(-lead))
}

// count adds a batch's events per hour to what this container wrote.
func (h *Hours) count(s bucketing.Stream, day string, counts [24]int32) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.wrote == nil || len(h.wrote) > maxMarked {
		h.wrote = map[hourKey]int{}
	}
	for hr, n := range counts {
		if n > 0 {
			h.wrote[hourKey{s, day, hr}] += int(n)
		}
	}
}

func (h *Hours) unmarked(s bucketing.Stream, day string, hours uint32) []int {
	h.mu.Lock()
	defer h.mu.Unlock()
	var todo []int
	for hr := range 24 {
		if hours&(1<<hr) != 0 && !h.marked[hourKey{s, day, hr}] {
			todo = append(todo, hr)
		}
	}
	return todo
}

func (h *Hours) remember(s bucketing.Stream, day string, hours []int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.marked == nil || len(h.marked) > maxMarked {
		h.marked = map[hourKey]bool{}
	}
	for _, hr := range hours {
		h.marked[hourKey{s, day, hr}] = true
	}
}

// DecodeHours reads the hours of an hour-index item; nil item means none
// were marked.
func DecodeHours(item map[string]types.AttributeValue) ([]int, error) {
	if item == nil {
		return nil, nil
	}
	ns, ok := item[schema.Hours].(*types.AttributeValueMemberNS)
	if !ok {
		return nil, fmt.Errorf("hour index: no %q number set", schema.Hours)
	}
	out := make([]int, 0, len(ns.Value))
	for _, v := range ns.Value {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > 23 {
			return nil, fmt.Errorf("hour index: bad hour %q", v)
		}
		out = append(out, n)
	}
	sort.Ints(out)
	return out, nil
}
