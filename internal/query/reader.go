// Package query is the query function: it reads pages of a source's events
// through the GSI or, for strongly consistent reads and when the GSI cannot
// serve, through a scatter-gather over the base table's shards; and it lists
// the quarantine.
package query

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/shardline/shardline/internal/schema"
	"github.com/shardline/shardline/internal/shardmap"
	"github.com/shardline/shardline/pkg/bucketing"
)

// API is the part of the DynamoDB client the reader uses.
type API interface {
	Query(context.Context, *dynamodb.QueryInput, ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
	BatchGetItem(context.Context, *dynamodb.BatchGetItemInput, ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error)
	shardmap.API
}

// DefaultConcurrency bounds the DynamoDB requests one page has in flight.
const DefaultConcurrency = 32

// Paths a page is served by.
const (
	PathGSI     = "gsi"
	PathScatter = "scatter"
)

// Plan says how a page was served.
type Plan struct {
	Path        string  `json:"path"`
	Reason      string  `json:"reason"`
	Requests    int     `json:"requests"`
	ConsumedRCU float64 `json:"consumed_rcu"`
}

// Page is one page of results: the items in order, and the cursor of the
// next page (nil on the last).
type Page struct {
	Items []map[string]types.AttributeValue
	Next  *Cursor
	Plan  Plan
}

// ErrDeadline is returned when a page could not be read in time; nothing is
// returned rather than a page that looks complete and is not.
var ErrDeadline = errors.New("query: the page could not be read before the deadline")

// Reader reads pages. It is safe for concurrent use; make one per container.
type Reader struct {
	Client      API
	Table       string
	Concurrency int              // requests in flight per page; default DefaultConcurrency
	Now         func() time.Time // default time.Now

	registry *shardmap.Registry // reads shard records, and caches them for the GSI path
	once     sync.Once
}

func (r *Reader) init() {
	r.once.Do(func() {
		if r.Now == nil {
			r.Now = time.Now
		}
		r.registry = &shardmap.Registry{Client: r.Client, Table: r.Table, Now: r.Now}
	})
}

// Events reads one page of p.Source's events: from the GSI unless
// p.Consistent, falling back to the base table when the GSI cannot serve.
func (r *Reader) Events(ctx context.Context, p Params) (Page, error) {
	r.init()
	if p.Consistent {
		return r.page(ctx, Events, &p, false, "consistent=true: strongly consistent reads come from the base table's shards")
	}
	pg, err := r.page(ctx, Events, &p, true, "the GSI serves eventually consistent reads, one hour bucket at a time")
	if err == nil || !gsiUnavailable(err) {
		return pg, err
	}
	reason := fmt.Sprintf("the GSI could not serve (%s): read the base table's shards instead", errorCode(err))
	fb, err := r.page(ctx, Events, &p, false, reason)
	fb.Plan.Requests += pg.Plan.Requests
	fb.Plan.ConsumedRCU += pg.Plan.ConsumedRCU
	return fb, err
}

// Quarantine reads one page of the quarantine, by time received.
func (r *Reader) Quarantine(ctx context.Context, p Params) (Page, error) {
	r.init()
	return r.page(ctx, Quarantine, &p, false, "the quarantine is read from the base table's shards")
}

// gsiUnavailable: the GSI is throttled, missing, or still being built.
func gsiUnavailable(err error) bool {
	var ae smithy.APIError
	if !errors.As(err, &ae) {
		return false
	}
	switch ae.ErrorCode() {
	case "ProvisionedThroughputExceededException", "ThrottlingException", "RequestLimitExceeded",
		"ResourceNotFoundException", "InternalServerError", "ServiceUnavailable":
		return true
	case "ValidationException":
		m := strings.ToLower(ae.ErrorMessage())
		return strings.Contains(m, "index") || strings.Contains(m, "backfill")
	}
	return false
}

func errorCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return err.Error()
}

// run is the work of one page.
type run struct {
	r      *Reader
	kind   Kind
	p      *Params
	gsi    bool
	sem    chan struct{}
	mu     sync.Mutex
	reqs   int
	rcu    float64
	lo, hi string // sort key bounds, inclusive
	skip   string // the sort key of the cursor's event, already returned
}

// segment is one time bucket of the range (an hour on the GSI, a day on the
// base table) and the partition keys that hold it. Segments do not overlap
// and are visited in order, so concatenating their merged streams gives the
// page in order.
type segment struct {
	start   time.Time
	streams []*stream
	err     error
}

type stream struct {
	in   dynamodb.QueryInput
	buf  []map[string]types.AttributeValue
	done bool
}

func (r *Reader) page(ctx context.Context, kind Kind, p *Params, gsi bool, reason string) (Page, error) {
	conc := r.Concurrency
	if conc <= 0 {
		conc = DefaultConcurrency
	}
	rn := &run{r: r, kind: kind, p: p, gsi: gsi, sem: make(chan struct{}, conc)}
	rn.lo = bucketing.FormatTime(p.From)
	rn.hi = bucketing.FormatTime(p.To.Add(-time.Nanosecond)) + "$" // above every key of the last instant
	spanFrom, spanTo := p.From, p.To
	if c := p.Cursor; c != nil {
		rn.skip = bucketing.SortKey(c.Time, c.ID)
		if p.Order == Asc {
			rn.lo, spanFrom = rn.skip, c.Time
		} else {
			rn.hi, spanTo = rn.skip, c.Time.Add(time.Nanosecond)
		}
	}
	step := 24 * time.Hour
	if gsi {
		step = time.Hour
	}
	starts := buckets(spanFrom, spanTo, step, p.Order)
	want := p.Limit + 1 // one more than the page, to know whether another page exists
	var items []map[string]types.AttributeValue
	window := 1
	for i := 0; i < len(starts) && len(items) < want; {
		batch := starts[i:min(i+window, len(starts))]
		segs := make([]*segment, len(batch))
		var wg sync.WaitGroup
		for k, start := range batch {
			segs[k] = &segment{start: start}
			wg.Add(1)
			go func() { defer wg.Done(); rn.prime(ctx, segs[k], want-len(items)) }()
		}
		wg.Wait()
		for _, seg := range segs {
			if seg.err != nil {
				return rn.result(nil, reason), rn.fail(ctx, seg.err)
			}
			if len(items) >= want {
				break
			}
			var err error
			if items, err = rn.drain(ctx, seg, items, want); err != nil {
				return rn.result(nil, reason), rn.fail(ctx, err)
			}
		}
		i += len(batch)
		window = min(window*2, 16) // a sparse range: look further ahead each round
	}
	// The cursor comes from the index's own keys, before any event is
	// fetched: it stays right even if an event expires in between.
	var nextCursor *Cursor
	if len(items) == want {
		last := items[p.Limit-1]
		t, id, err := bucketing.ParseSortKey(str(last[schema.SK]))
		if err != nil {
			return rn.result(nil, reason), fmt.Errorf("query: stored sort key %q: %w", str(last[schema.SK]), err)
		}
		nextCursor = next(kind, p, t, id)
		items = items[:p.Limit]
	}
	if rn.gsi {
		var err error
		if items, err = rn.fill(ctx, items); err != nil {
			return rn.result(nil, reason), rn.fail(ctx, err)
		}
	}
	pg := rn.result(items, reason)
	pg.Next = nextCursor
	return pg, nil
}

// fill fetches from the table the events of items that came from a Lean
// GSI, which carries keys and filter attributes only. An event that expired
// between the two reads is left out; that can shorten only a page whose
// events are being deleted anyway.
func (rn *run) fill(ctx context.Context, items []map[string]types.AttributeValue) ([]map[string]types.AttributeValue, error) {
	var need []map[string]types.AttributeValue
	for _, it := range items {
		if _, ok := it[schema.Event]; !ok {
			need = append(need, map[string]types.AttributeValue{schema.PK: it[schema.PK], schema.SK: it[schema.SK]})
		}
	}
	if len(need) == 0 {
		return items, nil
	}
	got := map[[2]string]types.AttributeValue{}
	for start := 0; start < len(need); start += 100 {
		keys := need[start:min(start+100, len(need))]
		for attempt := 0; len(keys) > 0; attempt++ {
			if attempt > 0 {
				select {
				case <-time.After(time.Duration(min(attempt, 6)) * 20 * time.Millisecond):
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			}
			if err := rn.acquire(ctx); err != nil {
				return nil, err
			}
			out, err := rn.r.Client.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{
				RequestItems: map[string]types.KeysAndAttributes{rn.r.Table: {
					Keys:                     keys,
					ProjectionExpression:     aws.String("#pk, #sk, #ev"),
					ExpressionAttributeNames: map[string]string{"#pk": schema.PK, "#sk": schema.SK, "#ev": schema.Event},
				}},
				ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal,
			})
			rn.release()
			if err != nil {
				rn.count(1, 0)
				return nil, fmt.Errorf("fetch events of a lean GSI page: %w", err)
			}
			var rcu float64
			for _, c := range out.ConsumedCapacity {
				rcu += aws.ToFloat64(c.CapacityUnits)
			}
			rn.count(1, rcu)
			for _, it := range out.Responses[rn.r.Table] {
				got[[2]string{str(it[schema.PK]), str(it[schema.SK])}] = it[schema.Event]
			}
			keys = out.UnprocessedKeys[rn.r.Table].Keys
		}
	}
	kept := items[:0]
	for _, it := range items {
		if _, ok := it[schema.Event]; !ok {
			ev, found := got[[2]string{str(it[schema.PK]), str(it[schema.SK])}]
			if !found {
				continue
			}
			it[schema.Event] = ev
		}
		kept = append(kept, it)
	}
	return kept, nil
}

func (rn *run) fail(ctx context.Context, err error) error {
	if ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%w: %v", ErrDeadline, err)
	}
	return err
}

func (rn *run) result(items []map[string]types.AttributeValue, reason string) Page {
	rn.mu.Lock()
	defer rn.mu.Unlock()
	path := PathScatter
	if rn.gsi {
		path = PathGSI
	}
	return Page{Items: items, Plan: Plan{Path: path, Reason: reason, Requests: rn.reqs, ConsumedRCU: rn.rcu}}
}

// buckets lists the starts of the step-long buckets that overlap [from, to),
// in order.
func buckets(from, to time.Time, step time.Duration, o Order) []time.Time {
	var out []time.Time
	for t := from.Truncate(step); t.Before(to); t = t.Add(step) {
		out = append(out, t)
	}
	if o == Desc {
		for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
			out[i], out[j] = out[j], out[i]
		}
	}
	return out
}

// prime finds the segment's partition keys and reads the first page of each.
func (rn *run) prime(ctx context.Context, seg *segment, need int) {
	pks, err := rn.partitions(ctx, seg.start)
	if err != nil {
		seg.err = err
		return
	}
	for _, pk := range pks {
		seg.streams = append(seg.streams, rn.stream(pk))
	}
	seg.err = rn.fetch(ctx, seg.streams, need)
}

// partitions lists the partition keys that hold the bucket starting at
// start, from the shard record of its day.
func (rn *run) partitions(ctx context.Context, start time.Time) ([]string, error) {
	day := bucketing.Day(start)
	s := bucketing.Stream{Space: bucketing.Events, Source: rn.p.Source}
	if rn.kind == Quarantine {
		s = bucketing.Stream{Space: bucketing.Quarantine}
	}
	sched, err := rn.schedule(ctx, s, day)
	if err != nil || sched == nil {
		return nil, err
	}
	var pks []string
	if rn.gsi {
		for g := range sched.MaxGSIShards() {
			pks = append(pks, bucketing.GSIPK(rn.p.Source, bucketing.Hour(start), g))
		}
		return pks, nil
	}
	for n := range sched.MaxShards() {
		pks = append(pks, s.PK(day, n))
	}
	return pks, nil
}

// schedule reads the shard record of (s, day). The base-table path reads it
// fresh, strongly consistent, for read-your-writes; the GSI path, already
// eventually consistent, takes the registry's cached copy.
func (rn *run) schedule(ctx context.Context, s bucketing.Stream, day string) (bucketing.Schedule, error) {
	if err := rn.acquire(ctx); err != nil {
		return nil, err
	}
	defer rn.release()
	var sched bucketing.Schedule
	var err error
	read := true
	if rn.gsi {
		sched, read, err = rn.r.registry.Cached(ctx, s, day)
	} else {
		sched, _, err = rn.r.registry.Lookup(ctx, s, day)
	}
	if read {
		rn.count(1, 0.5) // a strongly consistent read of a small item
	}
	if err != nil {
		return nil, fmt.Errorf("shard record for %s: %w", day, err)
	}
	return sched, nil
}

func (rn *run) stream(pk string) *stream {
	in := dynamodb.QueryInput{
		TableName:              aws.String(rn.r.Table),
		KeyConditionExpression: aws.String("#pk = :pk AND #sk BETWEEN :lo AND :hi"),
		ExpressionAttributeNames: map[string]string{
			"#pk": schema.PK, "#sk": schema.SK,
		},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":pk": &types.AttributeValueMemberS{Value: pk},
			":lo": &types.AttributeValueMemberS{Value: rn.lo},
			":hi": &types.AttributeValueMemberS{Value: rn.hi},
		},
		ScanIndexForward:       aws.Bool(rn.p.Order == Asc),
		ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal,
	}
	if rn.gsi {
		in.IndexName = aws.String(schema.GSIName)
		in.ExpressionAttributeNames["#pk"] = schema.GSIPK
	} else {
		in.ConsistentRead = aws.Bool(true)
	}
	var filters []string
	for _, f := range []struct{ attr, val string }{{schema.Type, rn.p.Type}, {schema.Subject, rn.p.Subject}} {
		if f.val == "" {
			continue
		}
		n := "#" + f.attr
		in.ExpressionAttributeNames[n] = f.attr
		in.ExpressionAttributeValues[":"+f.attr] = &types.AttributeValueMemberS{Value: f.val}
		filters = append(filters, n+" = :"+f.attr)
	}
	if len(filters) > 0 {
		in.FilterExpression = aws.String(strings.Join(filters, " AND "))
	}
	return &stream{in: in}
}

// fetch reads the next page of every stream that has nothing buffered and
// more to read, in parallel. need is how many more items the page can use:
// no stream is asked for more (plus one, for the cursor's own event).
func (rn *run) fetch(ctx context.Context, streams []*stream, need int) error {
	var wg sync.WaitGroup
	errs := make([]error, len(streams))
	for i, s := range streams {
		if len(s.buf) > 0 || s.done {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = rn.fetchOne(ctx, s, need)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (rn *run) fetchOne(ctx context.Context, s *stream, need int) error {
	if err := rn.acquire(ctx); err != nil {
		return err
	}
	defer rn.release()
	in := s.in
	in.Limit = aws.Int32(int32(min(need+1, MaxLimit+2)))
	out, err := rn.r.Client.Query(ctx, &in)
	if err != nil {
		rn.count(1, 0)
		return fmt.Errorf("query %s: %w", str(in.ExpressionAttributeValues[":pk"]), err)
	}
	var rcu float64
	if out.ConsumedCapacity != nil {
		rcu = aws.ToFloat64(out.ConsumedCapacity.CapacityUnits)
	}
	rn.count(1, rcu)
	s.buf = append(s.buf, out.Items...)
	if len(out.LastEvaluatedKey) == 0 {
		s.done = true
	} else {
		s.in.ExclusiveStartKey = out.LastEvaluatedKey
	}
	return nil
}

func (rn *run) acquire(ctx context.Context) error {
	select {
	case rn.sem <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (rn *run) release() { <-rn.sem }

func (rn *run) count(reqs int, rcu float64) {
	rn.mu.Lock()
	rn.reqs += reqs
	rn.rcu += rcu
	rn.mu.Unlock()
}

// drain merges the segment's streams into items, in order, until items holds
// want or the segment is exhausted.
func (rn *run) drain(ctx context.Context, seg *segment, items []map[string]types.AttributeValue, want int) ([]map[string]types.AttributeValue, error) {
	asc := rn.p.Order == Asc
	for len(items) < want {
		// A stream with nothing buffered may hold the next item: read on
		// until every stream has an item or is exhausted (a filter can make
		// a page of a stream come back empty, with more to read).
		for pending(seg.streams) {
			if err := rn.fetch(ctx, seg.streams, want-len(items)); err != nil {
				return items, err
			}
		}
		best, bestSK := -1, ""
		for i, s := range seg.streams {
			if len(s.buf) == 0 {
				continue
			}
			sk := str(s.buf[0][schema.SK])
			if best < 0 || (asc && sk < bestSK) || (!asc && sk > bestSK) {
				best, bestSK = i, sk
			}
		}
		if best < 0 {
			return items, nil
		}
		s := seg.streams[best]
		it := s.buf[0]
		s.buf = s.buf[1:]
		if bestSK == rn.skip {
			continue
		}
		items = append(items, it)
	}
	return items, nil
}

// pending: some stream has nothing buffered and more to read.
func pending(streams []*stream) bool {
	for _, s := range streams {
		if len(s.buf) == 0 && !s.done {
			return true
		}
	}
	return false
}

func str(v types.AttributeValue) string {
	if s, ok := v.(*types.AttributeValueMemberS); ok {
		return s.Value
	}
	return ""
}
