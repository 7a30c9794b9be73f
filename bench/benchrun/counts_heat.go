package benchrun

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/shardline/shardline/internal/counts"
	"github.com/shardline/shardline/internal/item"
	"github.com/shardline/shardline/internal/schema"
	"github.com/shardline/shardline/ops/sourcecounter"
	"github.com/shardline/shardline/pkg/bucketing"
)

// CountsHeat is the heat of a hot source's current counter item: the
// item's size measured after a simulated busy ten minutes, and a model of
// how often the mapping updates it.
type CountsHeat struct {
	Rate             int       `json:"events_per_second"`
	SimulatedShards  int       `json:"simulated_stream_shards"`
	Counters         int       `json:"counters"`
	CountBytes       int       `json:"count_bytes_measured"` // the largest count's size in the simulated item
	CountBytesAtRate int       `json:"count_bytes_at_rate"`
	ItemBytes        int       `json:"item_bytes_measured"`
	ItemBytesAtRate  int       `json:"item_bytes_at_rate"`
	WatermarkBytes   int       `json:"bytes_per_watermark"`
	RecordBytes      int       `json:"stream_record_bytes"`
	BatchLimit       int       `json:"records_per_invocation_limit"`
	Rows             []HeatRow `json:"rows"`
	BreakEvenShards  int       `json:"stream_shards_to_reach_limit"`
}

// HeatRow is the model for one number of stream shards carrying the source.
type HeatRow struct {
	Basis               string  `json:"basis"` // where this many shards comes from
	StreamShards        int     `json:"stream_shards"`
	RecordsPerShard     float64 `json:"records_per_second_per_shard"`
	InvocationsPerShard float64 `json:"invocations_per_second_per_shard"`
	UpdatesPerSecond    float64 `json:"updates_per_second"`
	ItemBytes           int     `json:"item_bytes"`
	WCUPerUpdate        int     `json:"wcu_per_update"`
	WCUPerSecond        float64 `json:"wcu_per_second"`
}

// heatShards is how many stream shards the benchmark's simulated hour
// spreads over.
const heatShards = 100

// measureHeat builds the counter items of a hot source's busiest hour
// through the real counter, spread over shards stream shards (every minute
// and type counted, one watermark per stream shard), measures the first (every item of the hour is alike:
// ten minutes of every type), and models its updates.
func measureHeat(ctx context.Context, client *dynamodb.Client, o CountsOptions, shards, recordBytes int, hour time.Time) (CountsHeat, error) {
	h := CountsHeat{Rate: o.HotRate, SimulatedShards: shards, RecordBytes: recordBytes}
	if err := schema.Create(ctx, client, countsHeatTable); err != nil {
		return h, err
	}
	if err := hotHour(ctx, client, o, shards, hour); err != nil {
		return h, err
	}
	out, err := client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(countsHeatTable), ConsistentRead: aws.Bool(true), Key: map[string]types.AttributeValue{
		schema.PK: &types.AttributeValueMemberS{Value: bucketing.CounterPK(hotSource)},
		schema.SK: &types.AttributeValueMemberS{Value: bucketing.CounterSK(hour)},
	}})
	if err != nil {
		return h, fmt.Errorf("read the hot hour's first counter item: %w", err)
	}
	h.measure(out.Item, o)
	h.model()
	return h, nil
}

// hotHour counts one event per minute and type from each of shards
// stream shards into the hot source's hour. The shards' invocations run
// one after another: DynamoDB Local serialises a table's writes anyway.
func hotHour(ctx context.Context, client *dynamodb.Client, o CountsOptions, shards int, hour time.Time) error {
	c := &sourcecounter.Counter{Client: client, Table: countsHeatTable, Retention: counts.DefaultRetentionDays * 24 * time.Hour}
	typs := eventTypes(o.Types)
	for k := range shards {
		sim := newSimSource(hotSource, typs, uint64(k))
		var recs []events.DynamoDBEventRecord
		for m := range 60 {
			for t, typ := range typs {
				at := hour.Add(time.Duration(m)*time.Minute + time.Duration(k)*time.Millisecond)
				_, r := sim.record(k+shards*(m*len(typs)+t), at, typ)
				recs = append(recs, r)
			}
		}
		if err := deliver(ctx, c, batch{shard: fmt.Sprintf("hot-%03d", k), recs: recs}); err != nil {
			return err
		}
	}
	return checkCount(ctx, client, countsHeatTable, hotSource, hour, hour.Add(time.Hour), int64(shards*60*len(typs)))
}

// measure sizes the item as it is and as it would be at h.Rate, whose
// counts (a minute's events of a type) have more significant digits.
func (h *CountsHeat) measure(counter map[string]types.AttributeValue, o CountsOptions) {
	h.ItemBytes = item.Bytes(counter)
	h.CountBytesAtRate = item.NumberBytes(strconv.Itoa(h.Rate*60/o.Types - 1))
	marks, markBytes := 0, 0
	h.ItemBytesAtRate = h.ItemBytes
	for name, v := range counter {
		n, ok := v.(*types.AttributeValueMemberN)
		switch {
		case !ok:
		case strings.HasPrefix(name, "c"):
			h.Counters++
			h.CountBytes = max(h.CountBytes, item.NumberBytes(n.Value))
			h.ItemBytesAtRate += h.CountBytesAtRate - item.NumberBytes(n.Value)
		case strings.HasPrefix(name, "w"):
			marks++
			markBytes += len(name) + item.NumberBytes(n.Value)
		}
	}
	h.WatermarkBytes = markBytes / max(1, marks)
}

// model bounds the current item's updates for a few stream shard
// counts: ceil(R/1000), the fewest partitions R one-KB writes a second fit
// in; the shards `shardline advise` gives for R, whose keys lie on at most
// as many partitions (a stream has one shard per partition); twice that,
// the realistic worst (two days' keys around midnight, or every key split
// for heat once); four times, a stress case. Each stream shard is invoked
// at most once per batching window, once more per tumbling window's end,
// and once per full invocation (BatchLimit records); each invocation
// updates the current counter item once (its records span at most two
// minutes, 20 counters, under the 200 one update carries), and the next
// one too when it straddles the end of a ten-minute item (a 15 s window in
// 600 s). The item is the measured one with one watermark per shard.
func (h *CountsHeat) model() {
	m := stackMapping
	h.BatchLimit = min(m.MaxRecords, m.MaxBytes/max(1, h.RecordBytes))
	advise := bucketing.ShardsFor(float64(h.Rate), 1)
	for _, b := range []struct {
		basis string
		s     int
	}{
		{"the fewest partitions its 1 KB writes fit in", int(math.Ceil(float64(h.Rate) / 1000))},
		{"its write shards (`shardline advise`): the partitions its keys can lie on", advise},
		{"twice that: every key split once, or two days' keys at once", 2 * advise},
		{"four times: a stress case", 4 * advise},
	} {
		r := h.row(b.s)
		r.Basis = b.basis
		h.Rows = append(h.Rows, r)
	}
	for s := 1; s <= 1<<20; s++ {
		if h.row(s).WCUPerSecond >= limitPartitionWCU {
			h.BreakEvenShards = s
			break
		}
	}
}

func (h *CountsHeat) row(s int) HeatRow {
	m := stackMapping
	r := HeatRow{StreamShards: s, RecordsPerShard: float64(h.Rate) / float64(s)}
	r.InvocationsPerShard = 1/m.Window.Seconds() + 1/m.Tumbling.Seconds() + r.RecordsPerShard/float64(h.BatchLimit)
	r.UpdatesPerSecond = float64(s) * r.InvocationsPerShard * (1 + m.Tumbling.Seconds()/bucketing.CounterSlice.Seconds())
	r.ItemBytes = h.ItemBytesAtRate + (s-h.SimulatedShards)*h.WatermarkBytes
	r.WCUPerUpdate = writeUnits(r.ItemBytes, r.ItemBytes)
	r.WCUPerSecond = r.UpdatesPerSecond * float64(r.WCUPerUpdate)
	return r
}
