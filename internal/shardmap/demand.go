package shardmap

import (
	"context"
	"fmt"
	"maps"
	"slices"
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

// demandSK is the sort key of a day's demand reports, beside its shard
// record. It sorts before "hours" and "shards", so that a reader's Query
// of the two (ReadDay) leaves it out.
const demandSK = "demand"

// demandPrefix names a writer's report in the item: "w_<writer>".
const demandPrefix = "w_"

// maxRemoved bounds the stale reports one report removes: each is "#rN, "
// in its REMOVE clause, and DynamoDB refuses an expression over 4 KB (past
// about 600 of them). A hundred take under 700 bytes; a fleet's worth that
// stopped at once goes over the writer's next reports, and until then is
// left out of every sum as it is now.
const maxRemoved = 100

// Rates are write units a second, base table and GSI.
type Rates struct {
	Table, GSI float64
}

// Measure is what one writer measured of a stream, or the writers' sum:
// what the stream asks of each index (Rates), what each index's keys took
// of it, and which indexes refused some of it. The Took of an index that
// refused is what its keys take: a key's capacity, measured.
type Measure struct {
	Rates
	Took    Rates
	Refused Indexes
	// Shards and GSIShards are the counts in effect when it was measured:
	// reports under other counts measured other keys, and are not added
	// up. 0 in a report of an earlier release, which adds up with any.
	Shards, GSIShards int
	// Behind is how far behind the source's arrivals the writer was, in
	// seconds: the age of the newest record offered to it. The sum's is
	// the most any writer was behind.
	Behind float64
}

// under says whether a report measured under the counts of o: the same
// counts, or a report that does not say.
func (m Measure) under(o Measure) bool {
	return m.Shards == 0 && m.GSIShards == 0 || m.Shards == o.Shards && m.GSIShards == o.GSIShards
}

// Indexes is a set of the table's indexes.
type Indexes uint8

// The indexes.
const (
	TableIndex Indexes = 1 << iota // the base table
	GSIIndex                       // the by-source-hour GSI
)

// Demand gathers, for a source that throttles, what each writer measured
// it asks: every writer (Lambda container) sees only its share of the
// source's traffic (its Kinesis shard's), so the source's demand is the sum
// of their reports. A report is one UpdateItem of one small item per
// (stream, day), whose answer (ReturnValues ALL_NEW) holds every writer's
// latest report: the sum costs no read. Writers report only while a
// source throttles, falls behind, or runs near its keys (adapt.Measure),
// at most twice per decision window each, so the item stays cool (see
// docs/keys.md), and a report older than Fresh is left out of the sum and
// removed, at most maxRemoved by a report.
type Demand struct {
	Client    HoursAPI
	Table     string
	Retention time.Duration // the item lives as long as the day's record
	Fresh     time.Duration // how old a report may be and count; default a minute

	mu    sync.Mutex
	stale map[string][]string  // per item: reports seen stale, removed by the next report
	last  map[string]time.Time // per item: this writer's last report
}

// Sum is what the writers of a source reported.
type Sum struct {
	Measure     // the sum of the fresh reports; Refused, the indexes any refused
	Writers int // how many writers made them
	// ReportedBefore says that this writer had reported within Fresh before: the
	// other writers have had as long to report as it has. A writer that
	// decides on its first report would decide on its share alone.
	ReportedBefore bool
}

// Report records that writer measured m of stream's traffic on day (a
// bucketing.DayLayout string) at now, and returns what the writers
// reported, this one included.
func (d *Demand) Report(ctx context.Context, s bucketing.Stream, day, writer string, m Measure, now time.Time) (sum Sum, err error) {
	key := map[string]types.AttributeValue{
		schema.PK: &types.AttributeValueMemberS{Value: s.MetaPK(day)},
		schema.SK: &types.AttributeValueMemberS{Value: demandSK},
	}
	expr := "SET #w = :w"
	names := map[string]string{"#w": demandPrefix + writer}
	values := map[string]types.AttributeValue{":w": encodeReport(m, now)}
	if t, err := time.Parse(bucketing.DayLayout, day); err == nil && d.Retention > 0 {
		expr += ", #e = :e"
		names["#e"] = schema.TTL
		values[":e"] = &types.AttributeValueMemberN{Value: strconv.FormatInt(t.Add(24*time.Hour+d.Retention).Unix(), 10)}
	}
	d.mu.Lock()
	old := d.stale[s.MetaPK(day)]
	d.mu.Unlock()
	var remove []string
	for _, n := range old {
		if n == demandPrefix+writer {
			continue
		}
		if len(remove) == maxRemoved {
			break // the rest, still stale, by the next reports
		}
		names["#r"+strconv.Itoa(len(remove))] = n
		remove = append(remove, "#r"+strconv.Itoa(len(remove)))
	}
	if len(remove) > 0 {
		expr += " REMOVE " + strings.Join(remove, ", ")
	}
	out, err := d.Client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(d.Table),
		Key:                       key,
		UpdateExpression:          aws.String(expr),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: values,
		ReturnValues:              types.ReturnValueAllNew,
	})
	if err != nil {
		return Sum{}, fmt.Errorf("report demand of %s: %w", s.MetaPK(day), err)
	}
	fresh := d.Fresh
	if fresh <= 0 {
		fresh = time.Minute
	}
	sum, stale := addUp(out.Attributes, m, now, fresh)
	// A stale report is left out of every sum, and removed by this
	// writer's next report of the day: the item holds only writers that
	// reported lately.
	d.mu.Lock()
	if d.stale == nil || len(d.stale) > maxMarked {
		d.stale, d.last = map[string][]string{}, map[string]time.Time{}
	}
	d.stale[s.MetaPK(day)] = stale
	prev, seen := d.last[s.MetaPK(day)]
	sum.ReportedBefore = seen && now.Sub(prev) <= fresh
	d.last[s.MetaPK(day)] = now
	d.mu.Unlock()
	return sum, nil
}

// addUp sums the writers' reports in an item's attributes that are fresh
// at now and measured under m's counts, and names the stale ones.
func addUp(attrs map[string]types.AttributeValue, m Measure, now time.Time, fresh time.Duration) (sum Sum, stale []string) {
	// In the writers' order, so that the sum's digits do not depend on a
	// map's order.
	for _, name := range slices.Sorted(maps.Keys(attrs)) {
		if !strings.HasPrefix(name, demandPrefix) {
			continue
		}
		r, at, ok := decodeReport(attrs[name])
		if !ok || now.Sub(at) > fresh {
			stale = append(stale, name)
			continue
		}
		if !r.under(m) {
			continue // measured other keys: a raise took effect between the two
		}
		sum.Table += r.Table
		sum.GSI += r.GSI
		sum.Took.Table += r.Took.Table
		sum.Took.GSI += r.Took.GSI
		sum.Refused |= r.Refused
		sum.Behind = max(sum.Behind, r.Behind)
		sum.Writers++
	}
	sum.Shards, sum.GSIShards = m.Shards, m.GSIShards
	return sum, stale
}

func rate(f float64) *types.AttributeValueMemberN {
	return &types.AttributeValueMemberN{Value: strconv.FormatFloat(f, 'f', 3, 64)}
}

// encodeReport is a writer's report of m at now, as decodeReport reads it.
func encodeReport(m Measure, now time.Time) types.AttributeValue {
	n := func(i int64) types.AttributeValue {
		return &types.AttributeValueMemberN{Value: strconv.FormatInt(i, 10)}
	}
	return &types.AttributeValueMemberL{Value: []types.AttributeValue{
		rate(m.Table), rate(m.GSI), n(now.Unix()),
		rate(m.Took.Table), rate(m.Took.GSI), n(int64(m.Refused)),
		n(int64(m.Shards)), n(int64(m.GSIShards)), rate(m.Behind),
	}}
}

// decodeReport reads a writer's report: [table rate, GSI rate, unix time,
// table took, GSI took, indexes refused, shards, GSI shards, seconds
// behind]; a report of an earlier release has the first three.
func decodeReport(v types.AttributeValue) (Measure, time.Time, bool) {
	l, ok := v.(*types.AttributeValueMemberL)
	if !ok || len(l.Value) != 3 && len(l.Value) != 9 {
		return Measure{}, time.Time{}, false
	}
	var f [9]float64
	for i, x := range l.Value {
		n, ok := x.(*types.AttributeValueMemberN)
		if !ok {
			return Measure{}, time.Time{}, false
		}
		var err error
		if f[i], err = strconv.ParseFloat(n.Value, 64); err != nil {
			return Measure{}, time.Time{}, false
		}
	}
	m := Measure{Rates: Rates{f[0], f[1]}, Took: Rates{f[3], f[4]}, Refused: Indexes(f[5]) & (TableIndex | GSIIndex),
		Shards: int(f[6]), GSIShards: int(f[7]), Behind: f[8]}
	return m, time.Unix(int64(f[2]), 0), true
}
